package oipgrpc

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	pb "github.com/carbongate/carbongate/oip/grpc/inferencepb"
)

// DefaultMaxMessageSize is the largest message NewServer accepts and sends
// unless ServerMaxMessageSize says otherwise (gRPC's own receive default).
const DefaultMaxMessageSize = 4 << 20

type serverConfig struct {
	maxMsg   int
	log      *slog.Logger
	gate     *oip.Gate
	health   *Health
	grpcOpts []grpc.ServerOption
}

// ServerOption configures NewServer and Register.
type ServerOption func(*serverConfig)

// ServerMaxMessageSize sets the largest message the server receives or
// sends (NewServer only; with Register, configure the grpc.Server).
func ServerMaxMessageSize(n int) ServerOption {
	return func(c *serverConfig) { c.maxMsg = n }
}

// ServerGate bounds the ModelInfer calls in flight to g's slots (default:
// no bound); a call that finds them all taken is answered Unavailable at
// once. Share g with the server's other transports to bound their sum. The
// other RPCs (health, metadata) are never limited. gRPC has read the
// message by then: ServerMaxMessageSize bounds what each call holds.
func ServerGate(g *oip.Gate) ServerOption {
	return func(c *serverConfig) { c.gate = g }
}

// ServerHealth makes NewServer register h as its health service (default:
// a NewHealth of its own), so that the caller can Shutdown h, ending the
// Watch calls, before GracefulStop.
func ServerHealth(h *Health) ServerOption {
	return func(c *serverConfig) { c.health = h }
}

// ServerLogger sets where unexpected (EINTERNAL) Backend errors and panics
// are logged, with the request id (default slog.Default()).
func ServerLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) { c.log = l }
}

// ServerGRPCOptions adds options to the grpc.Server NewServer creates
// (TLS credentials, interceptors, keepalive, ...).
func ServerGRPCOptions(opts ...grpc.ServerOption) ServerOption {
	return func(c *serverConfig) { c.grpcOpts = append(c.grpcOpts, opts...) }
}

func newServerConfig(opts []ServerOption) serverConfig {
	cfg := serverConfig{maxMsg: DefaultMaxMessageSize}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxMsg <= 0 {
		cfg.maxMsg = DefaultMaxMessageSize
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	return cfg
}

// NewServer returns a grpc.Server serving GRPCInferenceService and the
// standard health service (Health; see ServerHealth) over b. The caller
// owns it: Serve(listener), then GracefulStop (after the Health's
// Shutdown, or a watching client holds it) or Stop.
func NewServer(b oip.Backend, opts ...ServerOption) *grpc.Server {
	cfg := newServerConfig(opts)
	gopts := append([]grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.maxMsg), grpc.MaxSendMsgSize(cfg.maxMsg)}, cfg.grpcOpts...)
	s := grpc.NewServer(gopts...)
	pb.RegisterGRPCInferenceServiceServer(s, newService(b, cfg))
	h := cfg.health
	if h == nil {
		h = NewHealth(b)
	}
	h.Register(s)
	return s
}

// Register adds GRPCInferenceService over b to s, for a server that also
// serves other services.
func Register(s grpc.ServiceRegistrar, b oip.Backend, opts ...ServerOption) {
	cfg := newServerConfig(opts)
	pb.RegisterGRPCInferenceServiceServer(s, newService(b, cfg))
}

// service implements GRPCInferenceService over a Backend. Every method
// maps Backend errors with toStatus and turns a panic into Internal.
type service struct {
	pb.UnimplementedGRPCInferenceServiceServer
	b       oip.Backend
	limiter oip.Limiter  // nil: no per-model check before decoding
	obs     oip.Observer // nil: rejections not reported
	gate    *oip.Gate    // nil: no bound
	log     *slog.Logger
}

func newService(b oip.Backend, cfg serverConfig) *service {
	s := &service{b: b, gate: cfg.gate, log: cfg.log}
	s.limiter, _ = b.(oip.Limiter)
	s.obs, _ = b.(oip.Observer)
	return s
}

// rejected reports err, the answer to a ModelInfer that did not reach the
// Backend's Infer, to the Observer, and renders it.
func (s *service) rejected(ctx context.Context, r *pb.ModelInferRequest, err error) error {
	if s.obs != nil {
		s.obs.InferRejected(r.GetModelName(), err)
	}
	return s.fail(ctx, "ModelInfer", r.GetId(), err)
}

// fail renders err and logs it when it is unexpected.
func (s *service) fail(ctx context.Context, rpc, id string, err error) error {
	st, internal := toStatus(err)
	if internal {
		s.log.ErrorContext(ctx, "oip grpc: backend error", "rpc", rpc, "request_id", id, "err", err)
	}
	return st
}

// recover turns a panic of the Backend (or of this package) into Internal.
func (s *service) recover(ctx context.Context, rpc, id string, err *error) {
	if r := recover(); r != nil {
		s.log.ErrorContext(ctx, "oip grpc: panic", "rpc", rpc, "request_id", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, "internal error")
	}
}

func (s *service) ServerLive(ctx context.Context, _ *pb.ServerLiveRequest) (_ *pb.ServerLiveResponse, err error) {
	defer s.recover(ctx, "ServerLive", "", &err)
	ok, err := s.b.ServerLive(ctx)
	if err != nil {
		return nil, s.fail(ctx, "ServerLive", "", err)
	}
	return &pb.ServerLiveResponse{Live: ok}, nil
}

func (s *service) ServerReady(ctx context.Context, _ *pb.ServerReadyRequest) (_ *pb.ServerReadyResponse, err error) {
	defer s.recover(ctx, "ServerReady", "", &err)
	ok, err := s.b.ServerReady(ctx)
	if err != nil {
		return nil, s.fail(ctx, "ServerReady", "", err)
	}
	return &pb.ServerReadyResponse{Ready: ok}, nil
}

func (s *service) ModelReady(ctx context.Context, r *pb.ModelReadyRequest) (_ *pb.ModelReadyResponse, err error) {
	defer s.recover(ctx, "ModelReady", "", &err)
	if r.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "empty model name")
	}
	ok, err := s.b.ModelReady(ctx, r.GetName(), r.GetVersion())
	if err != nil {
		return nil, s.fail(ctx, "ModelReady", "", err)
	}
	return &pb.ModelReadyResponse{Ready: ok}, nil
}

func (s *service) ServerMetadata(ctx context.Context, _ *pb.ServerMetadataRequest) (_ *pb.ServerMetadataResponse, err error) {
	defer s.recover(ctx, "ServerMetadata", "", &err)
	md, err := s.b.ServerMetadata(ctx)
	if err != nil {
		return nil, s.fail(ctx, "ServerMetadata", "", err)
	}
	return &pb.ServerMetadataResponse{Name: md.Name, Version: md.Version, Extensions: md.Extensions}, nil
}

func (s *service) ModelMetadata(ctx context.Context, r *pb.ModelMetadataRequest) (_ *pb.ModelMetadataResponse, err error) {
	defer s.recover(ctx, "ModelMetadata", "", &err)
	if r.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "empty model name")
	}
	md, err := s.b.ModelMetadata(ctx, r.GetName(), r.GetVersion())
	if err != nil {
		return nil, s.fail(ctx, "ModelMetadata", "", err)
	}
	return &pb.ModelMetadataResponse{
		Name:     md.Name,
		Versions: md.Versions,
		Platform: md.Platform,
		Inputs:   tensorMetaToPB(md.Inputs),
		Outputs:  tensorMetaToPB(md.Outputs),
	}, nil
}

// ModelInfer takes a slot of the gate (Unavailable when none is free),
// checks the inputs' names, datatypes and shapes against the Backend's
// limits when it is an oip.Limiter, before converting any data, decodes and
// validates the request (InvalidArgument naming the tensor on any size,
// datatype or shape mismatch), calls the Backend, and
// answers with raw_output_contents when the request came with
// raw_input_contents or set the bool parameter ParamBinaryDataOutput, with
// contents otherwise. The response echoes the request id and names the
// model when the Backend leaves them empty.
func (s *service) ModelInfer(ctx context.Context, r *pb.ModelInferRequest) (_ *pb.ModelInferResponse, err error) {
	id := r.GetId()
	defer s.recover(ctx, "ModelInfer", id, &err)
	if s.gate != nil {
		if !s.gate.TryEnter() {
			return nil, s.rejected(ctx, r, s.gate.Overloaded())
		}
		defer s.gate.Leave()
	}
	req, err := s.decodeRequest(ctx, r)
	if err != nil {
		return nil, s.rejected(ctx, r, err)
	}
	raw := len(r.GetRawInputContents()) > 0
	if v, ok := req.Parameters[ParamBinaryDataOutput].(bool); ok && v {
		raw = true
	}

	resp, err := s.b.Infer(ctx, r.GetModelName(), r.GetModelVersion(), req)
	if err != nil {
		return nil, s.fail(ctx, "ModelInfer", id, err)
	}
	if resp == nil {
		return nil, s.fail(ctx, "ModelInfer", id, internal("backend returned a nil response", nil))
	}
	if err := resp.Validate(); err != nil {
		return nil, s.fail(ctx, "ModelInfer", id, internal("backend returned an invalid response", err))
	}
	outs, raws, err := encodeTensors("outputs", resp.Outputs, raw, mkOutput)
	if err != nil {
		return nil, s.fail(ctx, "ModelInfer", id, internal("backend response does not encode", err))
	}
	params, err := toParams("parameters", resp.Parameters)
	if err != nil {
		return nil, s.fail(ctx, "ModelInfer", id, internal("backend response does not encode", err))
	}
	out := &pb.ModelInferResponse{
		ModelName:         resp.ModelName,
		ModelVersion:      resp.ModelVersion,
		Id:                resp.ID,
		Parameters:        params,
		Outputs:           outs,
		RawOutputContents: raws,
	}
	if out.ModelName == "" {
		out.ModelName = r.GetModelName()
	}
	if out.Id == "" {
		out.Id = id
	}
	return out, nil
}

// decodeRequest checks r against the model's limits, then decodes and
// validates it.
func (s *service) decodeRequest(ctx context.Context, r *pb.ModelInferRequest) (*oip.InferenceRequest, error) {
	if r.GetModelName() == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "model_name", "empty model_name")
	}
	ws := inputWires(r.GetInputs())
	if s.limiter != nil {
		lim, err := s.limiter.InferLimits(ctx, r.GetModelName(), r.GetModelVersion())
		if err != nil {
			return nil, err
		}
		if err := lim.Check(wireHeaders(ws)); err != nil {
			return nil, err
		}
	}
	inputs, err := decodeTensors("input", ws, r.GetRawInputContents())
	if err != nil {
		return nil, err
	}
	req := &oip.InferenceRequest{ID: r.GetId(), Parameters: fromParams(r.GetParameters()), Inputs: inputs}
	if len(r.GetOutputs()) > 0 {
		req.Outputs = make([]oip.RequestedOutput, len(r.GetOutputs()))
		for i, o := range r.GetOutputs() {
			req.Outputs[i] = oip.RequestedOutput{Name: o.GetName(), Parameters: fromParams(o.GetParameters())}
		}
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

// internal wraps a fault of the Backend as EINTERNAL, whatever code err
// carries: a malformed response is the server's bug, not the caller's.
func internal(msg string, err error) error {
	return &forecast.Error{Code: forecast.EINTERNAL, Message: msg, Err: err}
}
