package oipgrpc

import (
	"context"
	"crypto/tls"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	pb "github.com/carbongate/carbongate/oip/grpc/inferencepb"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Client is an oip.Client over gRPC (HTTP/2). One Client holds one
// connection (grpc.ClientConn), reused by every call and safe for
// concurrent use; Close releases it.
type Client struct {
	conn     *grpc.ClientConn
	stub     pb.GRPCInferenceServiceClient
	timeout  time.Duration
	contents bool
}

var _ oip.Client = (*Client)(nil)

type clientConfig struct {
	creds     credentials.TransportCredentials
	authority string
	timeout   time.Duration
	contents  bool
	maxMsg    int
	dialOpts  []grpc.DialOption
}

// ClientOption configures NewClient and Dial.
type ClientOption func(*clientConfig)

// WithTLS makes the client use TLS with cfg (nil: system roots). Without
// it or WithTransportCredentials the connection is plaintext HTTP/2 (h2c).
func WithTLS(cfg *tls.Config) ClientOption {
	return func(c *clientConfig) { c.creds = credentials.NewTLS(cfg) }
}

// WithTransportCredentials sets the transport credentials directly.
func WithTransportCredentials(creds credentials.TransportCredentials) ClientOption {
	return func(c *clientConfig) { c.creds = creds }
}

// WithAuthority sets the :authority pseudo-header of every call to host,
// which ingresses (Istio, Knative) route on: for KServe, the
// InferenceService host, e.g. "zone-de.models.example.com".
func WithAuthority(host string) ClientOption {
	return func(c *clientConfig) { c.authority = host }
}

// WithTimeout sets the timeout of a call whose context has no deadline
// (default DefaultTimeout; 0 means none). A context deadline always wins.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) { c.timeout = d }
}

// WithContents makes Infer send tensors as InferTensorContents. By default
// it sends raw_input_contents whenever every input has a fixed-width
// datatype (all but BYTES), so the server answers raw too.
func WithContents() ClientOption {
	return func(c *clientConfig) { c.contents = true }
}

// WithMaxMessageSize sets the largest message the client sends or accepts
// (gRPC's default is 4 MiB to receive).
func WithMaxMessageSize(n int) ClientOption {
	return func(c *clientConfig) { c.maxMsg = n }
}

// WithDialOptions adds gRPC dial options (interceptors, keepalive, ...).
func WithDialOptions(opts ...grpc.DialOption) ClientOption {
	return func(c *clientConfig) { c.dialOpts = append(c.dialOpts, opts...) }
}

// NewClient returns a Client for target (a gRPC target: "host:port",
// "dns:///host:port", ...). It does not connect: the first call does.
// Errors are EINVALID.
func NewClient(target string, opts ...ClientOption) (*Client, error) {
	cfg := clientConfig{creds: insecure.NewCredentials(), timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if target == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "target", "empty gRPC target")
	}
	if cfg.timeout < 0 || cfg.maxMsg < 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "negative timeout or message size")
	}
	dopts := []grpc.DialOption{grpc.WithTransportCredentials(cfg.creds)}
	if cfg.authority != "" {
		dopts = append(dopts, grpc.WithAuthority(cfg.authority))
	}
	if cfg.maxMsg > 0 {
		dopts = append(dopts, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.maxMsg), grpc.MaxCallSendMsgSize(cfg.maxMsg)))
	}
	dopts = append(dopts, cfg.dialOpts...)
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "target", Message: "invalid gRPC target " + target, Err: err}
	}
	return &Client{conn: conn, stub: pb.NewGRPCInferenceServiceClient(conn), timeout: cfg.timeout, contents: cfg.contents}, nil
}

// Dial is NewClient followed by connecting: it returns once the connection
// is ready, or EUNAVAILABLE (with ctx's error in the chain) when ctx ends
// first. It does not retry beyond gRPC's own reconnect backoff.
func Dial(ctx context.Context, target string, opts ...ClientOption) (*Client, error) {
	c, err := NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	c.conn.Connect()
	for {
		s := c.conn.GetState()
		if s == connectivity.Ready {
			return c, nil
		}
		if !c.conn.WaitForStateChange(ctx, s) {
			c.conn.Close()
			return nil, &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "cannot connect to " + target + " (last state " + s.String() + ")", Err: ctx.Err()}
		}
	}
}

// Close closes the connection; calls in flight fail with EUNAVAILABLE.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.timeout == 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// ServerLive returns nil when the server says it is live, EUNAVAILABLE
// when it says it is not or cannot be reached.
func (c *Client) ServerLive(ctx context.Context) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.stub.ServerLive(ctx, &pb.ServerLiveRequest{})
	if err != nil {
		return fromStatus(ctx, "ServerLive", err)
	}
	if !r.GetLive() {
		return forecast.Errorf(forecast.EUNAVAILABLE, "server is not live")
	}
	return nil
}

// ServerReady returns nil when the server says it is ready, EUNAVAILABLE
// when it says it is not or cannot be reached.
func (c *Client) ServerReady(ctx context.Context) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.stub.ServerReady(ctx, &pb.ServerReadyRequest{})
	if err != nil {
		return fromStatus(ctx, "ServerReady", err)
	}
	if !r.GetReady() {
		return forecast.Errorf(forecast.EUNAVAILABLE, "server is not ready")
	}
	return nil
}

// ModelReady returns nil when the server says the model is ready,
// EUNAVAILABLE when it is not, ENOTFOUND when the server does not know it.
func (c *Client) ModelReady(ctx context.Context, model, version string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.stub.ModelReady(ctx, &pb.ModelReadyRequest{Name: model, Version: version})
	if err != nil {
		return fromStatus(ctx, "ModelReady", err)
	}
	if !r.GetReady() {
		return forecast.Errorf(forecast.EUNAVAILABLE, "model %q is not ready", model)
	}
	return nil
}

// ServerMetadata returns the server's metadata.
func (c *Client) ServerMetadata(ctx context.Context) (oip.ServerMetadata, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.stub.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
	if err != nil {
		return oip.ServerMetadata{}, fromStatus(ctx, "ServerMetadata", err)
	}
	return oip.ServerMetadata{Name: r.GetName(), Version: r.GetVersion(), Extensions: r.GetExtensions()}, nil
}

// ModelMetadata returns a model's metadata; ENOTFOUND for an unknown model.
func (c *Client) ModelMetadata(ctx context.Context, model, version string) (oip.ModelMetadata, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	r, err := c.stub.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: model, Version: version})
	if err != nil {
		return oip.ModelMetadata{}, fromStatus(ctx, "ModelMetadata", err)
	}
	return oip.ModelMetadata{
		Name:     r.GetName(),
		Versions: r.GetVersions(),
		Platform: r.GetPlatform(),
		Inputs:   tensorMetaFromPB(r.GetInputs()),
		Outputs:  tensorMetaFromPB(r.GetOutputs()),
	}, nil
}

// Infer runs req on model. It validates req first (EINVALID, nothing
// sent), sends inputs raw or as contents (see WithContents), and decodes
// the outputs from whichever form the server chose: raw_output_contents
// (Triton always, KServe when asked raw) or contents. Server errors map as
// in the table of errors.go; a response that does not decode (sizes,
// datatypes, duplicate names) is EINTERNAL naming the tensor. req is not
// modified; the response may share memory with nothing the caller owns.
func (c *Client) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	if req == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "nil inference request")
	}
	if model == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "model", "empty model name")
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	raw := !c.contents
	for i := range req.Inputs {
		if !fixedWidth(req.Inputs[i].Datatype) {
			raw = false
		}
	}
	in, raws, err := encodeTensors("inputs", req.Inputs, raw, mkInput)
	if err != nil {
		return nil, err
	}
	params, err := toParams("parameters", req.Parameters)
	if err != nil {
		return nil, err
	}
	preq := &pb.ModelInferRequest{
		ModelName:        model,
		ModelVersion:     version,
		Id:               req.ID,
		Parameters:       params,
		Inputs:           in,
		RawInputContents: raws,
	}
	if len(req.Outputs) > 0 {
		preq.Outputs = make([]*pb.ModelInferRequest_InferRequestedOutputTensor, len(req.Outputs))
		for i, o := range req.Outputs {
			p, err := toParams("outputs", o.Parameters)
			if err != nil {
				return nil, err
			}
			preq.Outputs[i] = &pb.ModelInferRequest_InferRequestedOutputTensor{Name: o.Name, Parameters: p}
		}
	}

	ctx, cancel := c.ctx(ctx)
	defer cancel()
	presp, err := c.stub.ModelInfer(ctx, preq)
	if err != nil {
		return nil, fromStatus(ctx, "ModelInfer", err)
	}
	outs, err := decodeTensors("output", outputWires(presp.GetOutputs()), presp.GetRawOutputContents())
	if err == nil {
		err = (&oip.InferenceResponse{Outputs: outs}).Validate()
	}
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINTERNAL, Field: forecast.ErrorField(err),
			Message: "malformed ModelInfer response from model " + model + ": " + forecast.ErrorMessage(err), Err: err}
	}
	return &oip.InferenceResponse{
		ModelName:    presp.GetModelName(),
		ModelVersion: presp.GetModelVersion(),
		ID:           presp.GetId(),
		Parameters:   fromParams(presp.GetParameters()),
		Outputs:      outs,
	}, nil
}
