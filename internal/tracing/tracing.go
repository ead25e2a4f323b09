// Package tracing turns OpenTelemetry tracing on from the standard OTEL_*
// environment variables and gives carbongate's packages spans, HTTP and gRPC
// instrumentation that cost nothing while it is off.
//
// Tracing is off unless the environment asks for it: OTEL_TRACES_EXPORTER=otlp,
// or an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) with OTEL_TRACES_EXPORTER unset.
// OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true keep it off. When on,
// spans go through a batch span processor (OTEL_BSP_*) to an OTLP exporter
// over http/protobuf or grpc (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL; the
// endpoint, headers, timeout, compression and TLS variables are the
// exporter's), sampled as OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say
// (default parentbased_always_on), with the resource of OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES (service.name defaults to the binary's name). The
// W3C traceparent and baggage headers are read from requests and written to
// outbound calls. QueryTracer adds a span per PostgreSQL or CrateDB query.
//
// OpenTelemetry's tracer provider and propagator are process-wide; so is
// whether tracing is on. Setup sets them once, before the servers and clients
// that Handler, Transport and the gRPC options instrument are built: those
// built while tracing is off are left as they are (no wrapper, no cost).
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"

	"github.com/carbongate/carbongate/forecast"
)

// ShutdownTimeout bounds Close: how long the last spans may take to export.
const ShutdownTimeout = 5 * time.Second

// scope names carbongate's own spans (the instrumentation scope).
const scope = "github.com/carbongate/carbongate"

// on is whether Setup turned tracing on in this process.
var on atomic.Bool

// Enabled reports whether tracing is on.
func Enabled() bool { return on.Load() }

// Tracing is what Setup started; Close flushes and stops it. A nil or off
// Tracing closes as a no-op.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// Setup reads the OTEL_* environment (see the package doc) and, when it asks
// for tracing, installs a tracer provider exporting to OTLP and the W3C
// propagators, for the service named service (unless OTEL_SERVICE_NAME says
// otherwise) at version; failed exports are logged to log (nil: not
// logged) as warnings. It returns an off Tracing when the environment does
// not ask for tracing, and EINVALID naming the variable for a value it does
// not support. Nothing connects before the first export.
func Setup(ctx context.Context, log *slog.Logger, service, version string) (*Tracing, error) {
	t, err := setup(ctx, os.Getenv, service, version)
	if err == nil && t.tp != nil && log != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "error", err) }))
	}
	return t, err
}

func setup(ctx context.Context, getenv func(string) string, service, version string) (*Tracing, error) {
	exp, err := exporter(ctx, getenv)
	if err != nil || exp == nil {
		return &Tracing{}, err
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", service), attribute.String("service.version", version)),
		resource.Environment())
	if err != nil {
		return &Tracing{}, forecast.Errorf(forecast.EINVALID, "OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	on.Store(true)
	return &Tracing{tp: tp}, nil
}

// exporter returns the OTLP span exporter the environment asks for, or nil
// when tracing stays off.
func exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	switch kind := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); kind {
	case "none":
		return nil, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "OTEL_TRACES_EXPORTER", "OTEL_TRACES_EXPORTER=%q: want otlp or none", kind)
	}
	protocol, name := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if protocol == "" {
		protocol, name = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	switch protocol {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	}
	return nil, forecast.FieldErrorf(forecast.EINVALID, name, "%s=%q: want http/protobuf or grpc", name, protocol)
}

// Close exports the spans still buffered and stops the exporter, within
// ShutdownTimeout. Tracing is off afterwards: spans of instrumentation
// built before are dropped, and what is built after is not instrumented.
func (t *Tracing) Close() error {
	if t == nil || t.tp == nil {
		return nil
	}
	on.Store(false)
	otel.SetTracerProvider(noop.NewTracerProvider())
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// Start starts a span named name as a child of ctx's span and returns the
// context holding it. While tracing is off it returns ctx as it is and a
// span that records nothing, without allocating. Callers set attributes
// only when span.IsRecording(), so building them costs nothing when off.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop.Span{}
	}
	return otel.Tracer(scope).Start(ctx, name, trace.WithSpanKind(kind))
}

// End ends span, recording err (when not nil) as its error status.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, forecast.ErrorMessage(err))
	}
	span.End()
}

// Carry returns dst holding src's span, for work started on src's behalf
// that outlives it (a shared computation on a detached context). While
// tracing is off it returns dst.
func Carry(dst, src context.Context) context.Context {
	if !on.Load() {
		return dst
	}
	if s := trace.SpanFromContext(src); s.SpanContext().IsValid() {
		return trace.ContextWithSpan(dst, s)
	}
	return dst
}

// Handler returns h wrapped to continue the caller's trace (traceparent)
// in a server span per request, named by method and path, when tracing is
// on; h itself otherwise. Probes and scrapes (/healthz, /readyz, /metrics,
// OIP's /v2/health/live and /v2/health/ready) have no span.
func Handler(h http.Handler, operation string) http.Handler {
	if !on.Load() {
		return h
	}
	return otelhttp.NewHandler(h, operation,
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics", "/v2/health/live", "/v2/health/ready":
				return false
			}
			return true
		}))
}

// Transport returns rt wrapped to make a client span per request and send
// its traceparent, when tracing is on; rt itself otherwise. A nil rt is
// http.DefaultTransport.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if !on.Load() {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return otelhttp.NewTransport(rt)
}

// DialOptions returns the gRPC client options that make a client span per
// call and send its traceparent, when tracing is on; none otherwise.
func DialOptions() []grpc.DialOption {
	if !on.Load() {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler())}
}

// ServerOptions returns the gRPC server options that continue the caller's
// trace in a server span per call, when tracing is on; none otherwise.
func ServerOptions() []grpc.ServerOption {
	if !on.Load() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler())}
}
