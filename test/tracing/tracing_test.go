//go:build interop

// Package tracing checks carbongate's traces end to end against a real
// OpenTelemetry Collector (test/setup/otelcol.sh): one /v1/schedule through
// carbongate and two carbonserve model servers, one routed over gRPC and one
// over REST, arrives as one trace whose spans link parent to child across
// the three processes; and a registry API request on a real PostgreSQL
// holds its queries. Run with `go test -tags interop ./test/tracing` (make
// test does).
package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

const (
	grpcZone = "DE" // routed over gRPC; its carbonserve exports over OTLP/gRPC
	restZone = "SE" // routed over REST; its carbonserve exports over OTLP/HTTP
)

var scheduleBody = []byte(`{"zones":["DE","SE"],"duration":"PT3H","deadline":"2021-06-04T00:00:00Z"}`)

func TestScheduleTrace(t *testing.T) {
	col := services.StartCollector(t)
	bin := services.GoBuild(t, "carbongate", "carbonserve", "carbonctl")
	models := filepath.Join(t.TempDir(), "models")
	services.Run(t, filepath.Join(bin, "carbonctl"), "train", "--data", "bundled", "--until", "2021-01-01T00:00:00Z",
		"--signal", "lifecycle", "--zones", grpcZone+","+restZone, "--out", models)

	var routes strings.Builder
	for _, z := range []struct {
		zone, protocol string
		env            []string
	}{
		{grpcZone, "grpc", exportTo("grpc", col.GRPC)},
		{restZone, "rest", exportTo("http/protobuf", col.HTTP)},
	} {
		name := "carbon-forecaster-" + z.zone
		var restURL, grpcAddr string
		services.StartBinary(t, services.Binary{
			Name: "carbonserve-" + z.zone, Path: filepath.Join(bin, "carbonserve"), Env: z.env,
			ArgsFor: func() []string {
				hp, gp := services.FreePort(t), services.FreePort(t)
				restURL, grpcAddr = fmt.Sprintf("http://127.0.0.1:%d", hp), fmt.Sprintf("127.0.0.1:%d", gp)
				return []string{"--host", "127.0.0.1", "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp),
					"--model_dir", filepath.Join(models, "lifecycle", z.zone), "--model_name", name,
					"--drain-delay", "0s", "--reload-interval", "0"}
			},
			Ready: func(ctx context.Context) error { return services.OIPReady(restURL, grpcAddr, name)(ctx) },
		})
		url := restURL
		if z.protocol == "grpc" {
			url = grpcAddr
		}
		fmt.Fprintf(&routes, "- {zone: %s, protocol: %s, url: %q, model: %s}\n", z.zone, z.protocol, url, name)
	}
	routesFile := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routesFile, []byte(routes.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The forecast cache computes a zone once an hour, for the first request
	// of the hour that needs it. At 360 times the wall speed the replay hour
	// turns every 10 s, while the cache's own refresh polls once a minute:
	// requests after the turn compute the forecasts, in their own traces.
	gateway := services.StartGatewayEnv(t, filepath.Join(bin, "carbongate"), exportTo("http/protobuf", col.HTTP), "--routes", routesFile,
		"--clock", "replay", "--replay-start", "2021-06-01T06:00:00Z", "--replay-speed", "360", "--upstream-timeout", "5s")

	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for n := 1; ; n++ {
		schedule(t, hc, gateway)
		spans := col.Spans(t)
		if tr, ok := remoteTrace(spans); ok {
			t.Logf("after %d requests, a trace of %d spans (of %d exported)", n, len(tr), len(spans))
			checkTrace(t, tr)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace of a /v1/schedule reached both carbonserve servers in 2 minutes; %d spans exported:\n%s", len(spans), summary(spans))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// exportTo is the environment that sends a process's spans to endpoint, with
// a short batch delay so that they reach the collector while a test polls.
func exportTo(protocol, endpoint string) []string {
	return []string{"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol, "OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_BSP_SCHEDULE_DELAY=100"}
}

// TestRegistryQueryTrace: with the registry on a real PostgreSQL, a
// registry API request's trace holds its queries as client spans, children
// of the request's server span.
func TestRegistryQueryTrace(t *testing.T) {
	col := services.StartCollector(t)
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	dbURL := services.StartPostgres(t).Database(t)
	services.Run(t, filepath.Join(bin, "carbonctl"), "registry", "migrate", "--registry", dbURL)
	gateway := services.StartGatewayEnv(t, filepath.Join(bin, "carbongate"), exportTo("http/protobuf", col.HTTP), "--registry", dbURL, "--registry-cache-dir", t.TempDir())

	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Post(gateway+"/api/2.0/mlflow/registered-models/create", "application/json", strings.NewReader(`{"name":"carbon-forecaster-DE"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("registered-models/create: status %d: %s", resp.StatusCode, body)
	}
	const route = "POST /api/2.0/mlflow/registered-models/create"
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans := col.Spans(t)
		var root services.Span
		for _, s := range spans {
			if s.Service == "carbongate" && s.Kind == services.SpanServer && s.Name == route {
				root = s
			}
		}
		var queries []string
		for _, s := range spans {
			if s.TraceID == root.TraceID && s.ParentID == root.SpanID && s.Kind == services.SpanClient {
				queries = append(queries, s.Name)
			}
		}
		if root.SpanID != "" && len(queries) > 0 {
			t.Logf("%s: %d query spans: %v", route, len(queries), queries)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace of %s with query spans under its server span in 30 s:\n%s", route, summary(spans))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func schedule(t *testing.T, hc *http.Client, base string) {
	t.Helper()
	resp, err := hc.Post(base+"/v1/schedule", "application/json", bytes.NewReader(scheduleBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/schedule: status %d: %s", resp.StatusCode, body)
	}
}

// remoteTrace returns the spans of a trace rooted at a /v1/schedule whose
// spans include a carbonserve server span of each protocol.
func remoteTrace(spans []services.Span) ([]services.Span, bool) {
	traces := map[string][]services.Span{}
	for _, s := range spans {
		traces[s.TraceID] = append(traces[s.TraceID], s)
	}
	for _, tr := range traces {
		var root, grpcServer, restServer bool
		for _, s := range tr {
			switch {
			case s.Service == "carbongate" && s.Name == "POST /v1/schedule" && s.ParentID == "":
				root = true
			case isGRPCServer(s):
				grpcServer = true
			case isRESTServer(s):
				restServer = true
			}
		}
		if root && grpcServer && restServer {
			return tr, true
		}
	}
	return nil, false
}

func isGRPCServer(s services.Span) bool {
	return s.Service == "carbonserve" && s.Kind == services.SpanServer && s.Name == "inference.GRPCInferenceService/ModelInfer"
}

func isRESTServer(s services.Span) bool {
	return s.Service == "carbonserve" && s.Kind == services.SpanServer && s.Name == "POST /v2/models/carbon-forecaster-"+restZone+"/infer"
}

// checkTrace: one root (carbongate's server span of the request); every
// other span's parent is in the trace; each carbonserve server span is the
// child of a carbongate client span, itself the child of the "fallback
// remote zone" step span, itself the child of the request's span.
func checkTrace(t *testing.T, tr []services.Span) {
	t.Helper()
	byID := map[string]services.Span{}
	for _, s := range tr {
		byID[s.SpanID] = s
	}
	var root services.Span
	for _, s := range tr {
		if s.ParentID == "" {
			if root.SpanID != "" {
				t.Fatalf("two roots in one trace: %+v and %+v\n%s", root, s, summary(tr))
			}
			root = s
			continue
		}
		if _, ok := byID[s.ParentID]; !ok {
			t.Errorf("span %q (%s) has parent %s, not in the trace", s.Name, s.Service, s.ParentID)
		}
	}
	if root.Service != "carbongate" || root.Kind != services.SpanServer || root.Name != "POST /v1/schedule" {
		t.Fatalf("root = %+v, want carbongate's server span POST /v1/schedule", root)
	}
	for _, leg := range []struct {
		protocol string
		server   func(services.Span) bool
	}{{"grpc", isGRPCServer}, {"rest", isRESTServer}} {
		for _, s := range tr {
			if !leg.server(s) {
				continue
			}
			client := byID[s.ParentID]
			if client.Service != "carbongate" || client.Kind != services.SpanClient {
				t.Errorf("%s: carbonserve's span %q has parent %+v, want a carbongate client span", leg.protocol, s.Name, client)
				continue
			}
			step := byID[client.ParentID]
			if step.Service != "carbongate" || step.Kind != services.SpanInternal || step.Name != "fallback remote zone" {
				t.Errorf("%s: client span %q has parent %+v, want carbongate's step span \"fallback remote zone\"", leg.protocol, client.Name, step)
				continue
			}
			if step.ParentID != root.SpanID {
				t.Errorf("%s: step span's parent is %s, want the request's span %s", leg.protocol, step.ParentID, root.SpanID)
			}
		}
	}
	if t.Failed() {
		t.Logf("trace:\n%s", summary(tr))
	}
}

func summary(spans []services.Span) string {
	var b strings.Builder
	for i, s := range spans {
		if i == 200 {
			fmt.Fprintf(&b, "... %d more\n", len(spans)-i)
			break
		}
		fmt.Fprintf(&b, "  %s %s parent=%s %s kind=%d %q\n", s.TraceID, s.SpanID, s.ParentID, s.Service, s.Kind, s.Name)
	}
	return b.String()
}
