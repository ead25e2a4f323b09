package tracing

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/test/testsupport"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestSetupOff: without an exporter or an endpoint, or with tracing turned
// off explicitly, nothing is installed and the helpers leave everything as
// it is, without allocating. It runs before TestSetupOn turns tracing on
// for the rest of the test binary.
func TestSetupOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"nothing set", nil},
		{"service name only", map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := setup(context.Background(), env(tc.env), "carbongate", "v0")
			if err != nil {
				t.Fatal(err)
			}
			if Enabled() || tr.tp != nil {
				t.Fatal("tracing on")
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	h := http.NotFoundHandler()
	if got := Handler(h, "x"); got == nil || DialOptions() != nil || ServerOptions() != nil || Transport(http.DefaultTransport) != http.DefaultTransport || QueryTracer() != nil {
		t.Fatalf("off: helpers wrapped something")
	}
	ctx, failed := context.Background(), errors.New("x")
	if n := testing.AllocsPerRun(100, func() {
		c, span := Start(ctx, "step", trace.SpanKindInternal)
		if span.IsRecording() || c != ctx {
			t.Fatal("off: Start made a span")
		}
		End(span, failed)
		_ = Carry(ctx, c)
	}); n != 0 {
		t.Fatalf("off: Start, End and Carry allocate %v times, want 0", n)
	}
}

func TestSetupInvalid(t *testing.T) {
	for _, tc := range []struct {
		env   map[string]string
		field string
	}{
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	} {
		_, err := setup(context.Background(), env(tc.env), "carbongate", "v0")
		var fe *forecast.Error
		if !errors.As(err, &fe) || fe.Code != forecast.EINVALID || fe.Field != tc.field {
			t.Errorf("%v: err = %v, want EINVALID naming %s", tc.env, err, tc.field)
		}
		if Enabled() {
			t.Fatalf("%v: tracing on after an error", tc.env)
		}
	}
}

// TestSetupOn: an OTLP endpoint turns tracing on; spans record, carry over
// to a detached context, and Close returns within its deadline although
// nothing listens at the endpoint (test/tracing checks the export).
func TestSetupOn(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		tr, err := Setup(context.Background(), nil, "carbongate", "v0")
		if err != nil {
			t.Fatal(err)
		}
		if !Enabled() || tr.tp == nil {
			t.Fatalf("%s: tracing off", protocol)
		}
		ctx, span := Start(context.Background(), "request", trace.SpanKindServer)
		if !span.IsRecording() {
			t.Fatalf("%s: span not recording", protocol)
		}
		carried := Carry(context.Background(), ctx)
		if got, want := trace.SpanContextFromContext(carried).SpanID(), span.SpanContext().SpanID(); got != want {
			t.Fatalf("%s: carried span %v, want %v", protocol, got, want)
		}
		qctx := QueryTracer().TraceQueryStart(ctx, nil, pgx.TraceQueryStartData{SQL: " select 1"})
		query := trace.SpanFromContext(qctx)
		if ro, ok := query.(sdktrace.ReadOnlySpan); !ok || ro.Name() != "SELECT" || ro.Parent().SpanID() != span.SpanContext().SpanID() {
			t.Fatalf("%s: query span %+v, want SELECT, child of the request", protocol, query)
		}
		QueryTracer().TraceQueryEnd(qctx, nil, pgx.TraceQueryEndData{})
		End(span, nil)
		for path, want := range map[string]bool{"/v1/schedule": true, "/healthz": false, "/v2/health/ready": false} {
			var recording bool
			h := Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				recording = trace.SpanFromContext(r.Context()).IsRecording()
			}), "test")
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
			if recording != want {
				t.Errorf("%s: %s has a span: %v, want %v", protocol, path, recording, want)
			}
		}
		if len(DialOptions()) != 1 || len(ServerOptions()) != 1 || Transport(nil) == http.DefaultTransport {
			t.Fatalf("%s: on: helpers wrapped nothing", protocol)
		}
		t0 := time.Now()
		_ = tr.Close() // the last export fails: nothing listens
		if d := time.Since(t0); d > ShutdownTimeout+time.Second {
			t.Fatalf("%s: Close took %v, want at most %v", protocol, d, ShutdownTimeout)
		}
	}
}

// TestExportErrorsLogged: a failed export is a warning in Setup's logger.
func TestExportErrorsLogged(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	var logs testsupport.SyncBuffer
	tr, err := Setup(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)), "carbongate", "v0")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, span := Start(context.Background(), "request", trace.SpanKindServer)
	span.End()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), `"level":"WARN","msg":"tracing","error":"traces export`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no export failure logged in 20 s; logs: %s", logs.String())
		}
	}
}
