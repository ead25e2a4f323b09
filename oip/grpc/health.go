package oipgrpc

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	pb "github.com/carbongate/carbongate/oip/grpc/inferencepb"
)

// HealthWatchInterval is how often a Watch call of the health service asks
// the Backend again; a change is sent at the next poll.
const HealthWatchInterval = 500 * time.Millisecond

// Health is the standard gRPC health service (grpc.health.v1) over a
// Backend; NewServer registers one. It answers from the Backend at each
// call, so it says what OIP's ServerReady and ModelReady say, drain
// included:
//
//   - service "" or "inference.GRPCInferenceService": SERVING when
//     ServerReady, else NOT_SERVING;
//   - any other service names a model: SERVING when ModelReady(model, ""),
//     NOT_SERVING while it loads; a model the Backend does not know is
//     NotFound for Check and SERVICE_UNKNOWN for Watch (the protocol's
//     answers for an unknown service).
//
// Watch sends the status at once, then each change, polling every
// HealthWatchInterval until the client leaves or Shutdown. List names the
// server's two services. (grpc/health's own Server holds statuses set by
// the caller; asking the Backend keeps one source of readiness.)
type Health struct {
	healthpb.UnimplementedHealthServer
	b    oip.Backend
	stop chan struct{}
	once sync.Once
}

// NewHealth returns the health service over b.
func NewHealth(b oip.Backend) *Health { return &Health{b: b, stop: make(chan struct{})} }

// Register adds h to s.
func (h *Health) Register(s grpc.ServiceRegistrar) { healthpb.RegisterHealthServer(s, h) }

// Shutdown ends every Watch (Unavailable) and refuses new ones, so that a
// watching client does not hold the server's GracefulStop: call it first.
func (h *Health) Shutdown() { h.once.Do(func() { close(h.stop) }) }

// status returns the serving status of service; ENOTFOUND for an unknown
// model.
func (h *Health) status(ctx context.Context, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	var ok bool
	var err error
	if service == "" || service == pb.GRPCInferenceService_ServiceDesc.ServiceName {
		ok, err = h.b.ServerReady(ctx)
	} else {
		ok, err = h.b.ModelReady(ctx, service, "")
	}
	switch {
	case forecast.ErrorCode(err) == forecast.ENOTFOUND:
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, err
	case err != nil && ctx.Err() != nil:
		return healthpb.HealthCheckResponse_UNKNOWN, err
	case err != nil, !ok: // a Backend that cannot answer is not serving
		return healthpb.HealthCheckResponse_NOT_SERVING, nil
	}
	return healthpb.HealthCheckResponse_SERVING, nil
}

func (h *Health) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, err := h.status(ctx, r.GetService())
	switch {
	case st == healthpb.HealthCheckResponse_SERVICE_UNKNOWN:
		return nil, status.Errorf(codes.NotFound, "unknown service %q", r.GetService())
	case err != nil:
		return nil, status.FromContextError(err).Err()
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h *Health) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	st, err := h.status(ctx, "")
	if err != nil {
		return nil, status.FromContextError(err).Err()
	}
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, name := range []string{"", pb.GRPCInferenceService_ServiceDesc.ServiceName} {
		out.Statuses[name] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

func (h *Health) Watch(r *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	select {
	case <-h.stop:
		return status.Error(codes.Unavailable, "server shutting down")
	default:
	}
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	t := time.NewTicker(HealthWatchInterval)
	defer t.Stop()
	for {
		st, _ := h.status(ctx, r.GetService())
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.stop:
			return status.Error(codes.Unavailable, "server shutting down")
		case <-t.C:
		}
	}
}
