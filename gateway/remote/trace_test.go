package remote

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/carbongate/carbongate/gateway/remote/remotetest"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/internal/tracing"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
)

// headerBackend records the traceparent metadata of gRPC calls.
type headerBackend struct {
	*remotetest.Backend
	mu  sync.Mutex
	got string
}

func (b *headerBackend) ModelReady(ctx context.Context, model, version string) (bool, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	b.mu.Lock()
	b.got = strings.Join(md.Get("traceparent"), ",")
	b.mu.Unlock()
	return b.Backend.ModelReady(ctx, model, version)
}

// TestTraceparent: with tracing on, the clients Dial returns send the W3C
// traceparent of the caller's span over REST and gRPC, as every OIP model
// server (carbonserve, KServe, MLServer) receives it.
func TestTraceparent(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer receiver.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	tr, err := tracing.Setup(context.Background(), nil, "carbongate", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx, span := tracing.Start(context.Background(), "request", trace.SpanKindServer)
	defer span.End()
	traceID := span.SpanContext().TraceID().String()

	var mu sync.Mutex
	var restGot string
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		restGot = r.Header.Get("traceparent")
		mu.Unlock()
	}))
	defer rs.Close()

	gb := &headerBackend{Backend: remotetest.NewBackend("m", 24, 48, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := oipgrpc.NewServer(gb)
	go func() { _ = gs.Serve(ln) }()
	defer gs.Stop()

	for _, tc := range []struct {
		ep  route.Endpoint
		got func() string
	}{
		{route.Endpoint{Zone: "DE", Protocol: route.ProtocolREST, URL: rs.URL, Model: "m"}, func() string { mu.Lock(); defer mu.Unlock(); return restGot }},
		{route.Endpoint{Zone: "DE", Protocol: route.ProtocolGRPC, URL: ln.Addr().String(), Model: "m"}, func() string { gb.mu.Lock(); defer gb.mu.Unlock(); return gb.got }},
	} {
		c, err := Dial(tc.ep)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ModelReady(ctx, "m", ""); err != nil {
			t.Errorf("%s: ModelReady: %v", tc.ep.Protocol, err)
		}
		c.Close()
		// traceparent: 00-<trace id>-<the client span's id>-<flags>
		if got := tc.got(); !strings.HasPrefix(got, "00-"+traceID+"-") || strings.Contains(got, span.SpanContext().SpanID().String()) {
			t.Errorf("%s: traceparent %q, want the trace %s with the client call's own span", tc.ep.Protocol, got, traceID)
		}
	}
}
