package services

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// Collector is a running OpenTelemetry Collector (test/setup/otelcol.sh):
// an OTLP receiver whose spans its file exporter writes as OTLP JSON lines.
type Collector struct {
	GRPC string // OTLP/gRPC endpoint, http://127.0.0.1:port
	HTTP string // OTLP/HTTP endpoint, http://127.0.0.1:port
	file string
}

// Span is one exported span, as the tests read it.
type Span struct {
	Service  string // the resource's service.name
	TraceID  string // hex
	SpanID   string // hex
	ParentID string // hex; "" for a root span
	Name     string
	Kind     int // OTLP SpanKind: 1 internal, 2 server, 3 client
}

// OTLP span kinds.
const (
	SpanInternal = 1
	SpanServer   = 2
	SpanClient   = 3
)

// StartCollector starts the collector the CARBONGATE_OTELCOL environment
// variable names (else the one test/setup/otelcol.sh builds) on free
// loopback ports, and returns once its OTLP/HTTP receiver accepts an export.
func StartCollector(tb testing.TB) *Collector {
	tb.Helper()
	bin := Tool(tb, "CARBONGATE_OTELCOL", "otelcol.sh")
	dir := tb.TempDir()
	c := &Collector{file: filepath.Join(dir, "spans.jsonl")}
	config := filepath.Join(dir, "otelcol.yaml")
	StartBinary(tb, Binary{
		Name: "otelcol", Path: bin,
		ArgsFor: func() []string {
			g, h := FreePort(tb), FreePort(tb)
			c.GRPC, c.HTTP = fmt.Sprintf("http://127.0.0.1:%d", g), fmt.Sprintf("http://127.0.0.1:%d", h)
			// The collector's own metrics are off: their default port would clash.
			cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: "127.0.0.1:%d"}
      http: {endpoint: "127.0.0.1:%d"}
exporters:
  file: {path: %q, flush_interval: 100ms}
service:
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [otlp], exporters: [file]}
`, g, h, c.file)
			if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
				tb.Fatal(err)
			}
			return []string{"--config", "file:" + config}
		},
		Ready: func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.HTTP+"/v1/traces", bytes.NewReader([]byte("{}")))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{}).Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("OTLP/HTTP export: status %d", resp.StatusCode)
			}
			return nil
		},
	})
	return c
}

// Spans returns the spans the collector has written so far.
func (c *Collector) Spans(tb testing.TB) []Span {
	tb.Helper()
	b, err := os.ReadFile(c.file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	// A last line without its newline is still being written: the next call
	// reads it whole.
	lines := bytes.Split(b, []byte("\n"))
	lines = lines[:len(lines)-1]
	type anyValue struct {
		StringValue string `json:"stringValue"`
	}
	var spans []Span
	for _, l := range lines {
		var line struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string   `json:"key"`
						Value anyValue `json:"value"`
					} `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID  string `json:"traceId"`
						SpanID   string `json:"spanId"`
						ParentID string `json:"parentSpanId"`
						Name     string `json:"name"`
						Kind     int    `json:"kind"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(l, &line); err != nil {
			tb.Fatalf("services: collector output: %v", err)
		}
		for _, rs := range line.ResourceSpans {
			var service string
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					service = a.Value.StringValue
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, Span{Service: service, TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentID, Name: s.Name, Kind: s.Kind})
				}
			}
		}
	}
	return spans
}
