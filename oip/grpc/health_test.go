package oipgrpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
)

// flipBackend is backend whose server readiness can change.
type flipBackend struct {
	backend
	readyNow atomic.Bool
}

func (b *flipBackend) ServerReady(context.Context) (bool, error) { return b.readyNow.Load(), nil }

func healthClient(t *testing.T, b oip.Backend, opts ...oipgrpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	addr := serve(t, oipgrpc.NewServer(b, append([]oipgrpc.ServerOption{oipgrpc.ServerLogger(quietLog)}, opts...)...))
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// TestHealthCheck: grpc.health.v1 Check answers from the Backend: the
// server (by "" or by the OIP service's name) and models by name; an
// unknown model is NotFound.
func TestHealthCheck(t *testing.T) {
	t.Parallel()
	b := &flipBackend{}
	b.readyNow.Store(true)
	hc := healthClient(t, b)
	tests := []struct {
		service string
		want    healthpb.HealthCheckResponse_ServingStatus
		code    codes.Code
	}{
		{"", healthpb.HealthCheckResponse_SERVING, codes.OK},
		{"inference.GRPCInferenceService", healthpb.HealthCheckResponse_SERVING, codes.OK},
		{"echo", healthpb.HealthCheckResponse_SERVING, codes.OK},
		{"down", healthpb.HealthCheckResponse_NOT_SERVING, codes.OK},
		{"busy", healthpb.HealthCheckResponse_NOT_SERVING, codes.OK},
		{"missing", 0, codes.NotFound},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range tests {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: tt.service})
		if got := status.Code(err); got != tt.code || tt.code == codes.OK && r.GetStatus() != tt.want {
			t.Errorf("Check(%q) = %v, %v; want %v, %v", tt.service, r.GetStatus(), err, tt.want, tt.code)
		}
	}
	b.readyNow.Store(false)
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Check while not ready = %v, %v; want NOT_SERVING", r.GetStatus(), err)
	}
	l, err := hc.List(ctx, &healthpb.HealthListRequest{})
	if err != nil || len(l.GetStatuses()) != 2 || l.GetStatuses()[""].GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("List = %v, %v", l.GetStatuses(), err)
	}
}

// TestHealthWatch: Watch sends the status at once and each change; an
// unknown model is SERVICE_UNKNOWN; Shutdown ends the watches and refuses
// new ones.
func TestHealthWatch(t *testing.T) {
	t.Parallel()
	b := &flipBackend{}
	h := oipgrpc.NewHealth(b)
	hc := healthClient(t, b, oipgrpc.ServerHealth(h))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []healthpb.HealthCheckResponse_ServingStatus{
		healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING,
	} {
		r, err := w.Recv()
		if err != nil || r.GetStatus() != want {
			t.Fatalf("update %d: %v, %v; want %v", i, r.GetStatus(), err, want)
		}
		b.readyNow.Store(!b.readyNow.Load())
	}
	u, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := u.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVICE_UNKNOWN {
		t.Fatalf("Watch(missing): %v, %v; want SERVICE_UNKNOWN", r.GetStatus(), err)
	}
	h.Shutdown()
	if _, err := w.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Watch after Shutdown: %v, want Unavailable", err)
	}
	again, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = again.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("new Watch after Shutdown: %v, want Unavailable", err)
	}
}
