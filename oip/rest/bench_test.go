package rest

import (
	"strconv"
	"testing"
	"time"

	"github.com/carbongate/carbongate/oip"
)

// BenchmarkInferForecast is a [1,336] → [1,96] FP32 forecast (plus lower
// and upper) over REST on loopback, through the real client and handler.
func BenchmarkInferForecast(b *testing.B) {
	hist := make([]float64, bigContract.Lookback)
	for i := range hist {
		hist[i] = 200 + float64(i%24)*3.7
	}
	req, err := oip.NewForecastRequest("bench", [][]float64{hist}, []time.Time{t0})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			c, _ := serve(b, newTestBackend(), nil, m.opts...)
			ctx := ctxT(b)
			b.ReportAllocs()
			var sink [][]float64
			for b.Loop() {
				resp, err := c.Infer(ctx, "big", "", req)
				if err != nil {
					b.Fatal(err)
				}
				fc, _, _, err := oip.ParseForecastResponse(resp, 1, bigContract)
				if err != nil {
					b.Fatal(err)
				}
				sink = fc
			}
			if len(sink) != 1 || len(sink[0]) != bigContract.Horizon {
				b.Fatalf("forecast shape %d", len(sink))
			}
		})
	}
}

// BenchmarkDecodeRequest measures the server-side decoders alone.
func BenchmarkDecodeRequest(b *testing.B) {
	hist := make([]float64, bigContract.Lookback)
	for i := range hist {
		hist[i] = 200 + float64(i%24)*3.7
	}
	req, err := oip.NewForecastRequest("bench", [][]float64{hist}, []time.Time{t0})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		bin  func(*oip.Tensor) bool
	}{
		{"json", nil},
		{"binary", func(*oip.Tensor) bool { return true }},
	} {
		body, n, err := encodeRequest(nil, req, tc.bin, false)
		if err != nil {
			b.Fatal(err)
		}
		hl := ""
		if n >= 0 {
			hl = strconv.Itoa(n)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			var sink *oip.InferenceRequest
			for b.Loop() {
				r, err := decodeRequest(body, hl, nil)
				if err != nil {
					b.Fatal(err)
				}
				sink = r
			}
			_ = sink
		})
	}
}
