package main

import (
	"context"
	"io"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
)

// BenchmarkThroughput is the "carbonserve batch throughput" goal:
// forecasts per second of a production-shaped ridge model (L = 168,
// H = 96) at B = 1 and B = 64, through the Backend directly and over gRPC
// and REST on loopback, with GOMAXPROCS concurrent callers, asking for the
// forecast only and for every output (forecast, lower, upper).
func BenchmarkThroughput(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "DE")
	servetest.Save(b, dir, servetest.Production(b, "carbon-forecaster-DE", "DE", 0))
	m := NewMain()
	m.Stderr, m.Getenv = io.Discard, noEnv
	m.DrainDelay = 0
	if err := m.ParseFlags([]string{"--host", "127.0.0.1", "--http_port", "0", "--grpc_port", "0", "--model_dir", dir, "--reload-interval", "0"}); err != nil {
		b.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.LoadErr(); err != nil {
		b.Fatal(err)
	}
	cs := clients(b, m)
	targets := []struct {
		name  string
		infer func(ctx context.Context, req *oip.InferenceRequest) (*oip.InferenceResponse, error)
	}{
		{"backend", func(ctx context.Context, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
			return m.Backend.Infer(ctx, "carbon-forecaster-DE", "", req)
		}},
		{"grpc", func(ctx context.Context, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
			return cs["grpc"].Infer(ctx, "carbon-forecaster-DE", "", req)
		}},
		{"rest", func(ctx context.Context, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
			return cs["rest"].Infer(ctx, "carbon-forecaster-DE", "", req)
		}},
	}
	for _, tg := range targets {
		for _, bs := range []int{1, 64} {
			for _, outs := range []string{"forecast", "interval"} {
				b.Run(tg.name+"/B="+strconv.Itoa(bs)+"/"+outs, func(b *testing.B) {
					h, st := servetest.InputL(bs, 168)
					req := &oip.InferenceRequest{Inputs: []oip.Tensor{
						{Name: oip.InputHistory, Datatype: oip.FP32, Shape: []int64{int64(bs), 168}, FP32: h},
						{Name: oip.InputStart, Datatype: oip.INT64, Shape: []int64{int64(bs), 1}, INT64: st},
					}}
					if outs == "forecast" {
						req.Outputs = []oip.RequestedOutput{{Name: oip.OutputForecast}}
					}
					b.ReportAllocs()
					t0 := time.Now()
					b.RunParallel(func(pb *testing.PB) {
						var sink *oip.InferenceResponse
						for pb.Next() {
							resp, err := tg.infer(context.Background(), req)
							if err != nil {
								b.Error(err)
								return
							}
							sink = resp
						}
						_ = sink
					})
					b.ReportMetric(float64(b.N*bs)/time.Since(t0).Seconds(), "forecasts/s")
				})
			}
		}
	}
}
