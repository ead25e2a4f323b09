package main

// The gRPC server: started once the first load ended.

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"

	"github.com/carbongate/carbongate/internal/tracing"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
)

// startGRPC serves gRPC on its listener once the first load ended, as
// KServe's and Triton's servers load their models before serving: the
// largest message it receives is derived from the loaded models (see
// grpcMaxMessage), and grpc.Server fixes it at construction. Until then
// gRPC clients connect and wait. It does nothing once Close began.
func (m *Main) startGRPC() {
	m.grpcMu.Lock()
	defer m.grpcMu.Unlock()
	if m.grpcStopped {
		return
	}
	maxMsg := m.grpcMaxMessage()
	m.grpcHealth = oipgrpc.NewHealth(m.backend())
	m.grpcSrv = oipgrpc.NewServer(m.backend(), oipgrpc.ServerLogger(m.Logger), oipgrpc.ServerGate(m.gate), oipgrpc.ServerMaxMessageSize(maxMsg),
		oipgrpc.ServerHealth(m.grpcHealth), oipgrpc.ServerGRPCOptions(tracing.ServerOptions()...))
	srv, ln := m.grpcSrv, m.grpcLn
	m.wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.done <- fmt.Errorf("grpc: %w", err)
		}
	})
	m.Logger.Info("grpc serving", "grpc", ln.Addr().String(), "max_message_bytes", maxMsg)
}

// grpcMaxMessage is the largest ModelInfer request of the loaded models at
// --max-batch rows (oip.Limits.MaxBinaryBytes: raw contents are exact,
// packed FP32 4 bytes a value), and at least the response of the largest
// (forecast, lower and upper FP32 at 4 bytes a value), so that one limit
// serves both directions. A model reloaded with a longer lookback can take
// larger messages than this until carbonserve restarts: requests above it
// get ResourceExhausted.
func (m *Main) grpcMaxMessage() int {
	n := int64(oip.RequestOverheadBytes)
	for _, st := range m.Backend.Models() {
		if !st.Ready {
			continue
		}
		lim, err := m.Backend.InferLimits(context.Background(), st.Name, "")
		if err != nil {
			continue
		}
		out := int64(oip.RequestOverheadBytes) + 3*4*int64(m.MaxBatch)*int64(st.Meta.Horizon)
		n = max(n, lim.MaxBinaryBytes(), out)
	}
	return int(n)
}

// stopGRPC stops the gRPC server gracefully within ctx, or closes its
// listener when it never started serving; after it startGRPC does nothing.
func (m *Main) stopGRPC(ctx context.Context) {
	m.grpcMu.Lock()
	srv, ln, health := m.grpcSrv, m.grpcLn, m.grpcHealth
	m.grpcStopped = true
	m.grpcMu.Unlock()
	if srv == nil {
		ln.Close()
		return
	}
	health.Shutdown() // health watchers would hold GracefulStop
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		srv.Stop()
		<-stopped
	}
}
