package oipgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	pb "github.com/carbongate/carbongate/oip/grpc/inferencepb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := checkGoroutines(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// checkGoroutines fails when goroutines of gRPC or of this package outlive
// the tests (servers not stopped, connections not closed).
func checkGoroutines() error {
	var leaked string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = ""
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "google.golang.org/grpc") || strings.Contains(g, "carbongate/oip/grpc") {
				if !strings.Contains(g, "checkGoroutines") {
					leaked += g + "\n\n"
				}
			}
		}
		if leaked == "" {
			return nil
		}
	}
	return fmt.Errorf("leaked goroutines:\n%s", leaked)
}

// backend is a small in-test oip.Backend. Models: "echo" returns the
// inputs as outputs; "blocked" waits for ctx; "down" is not ready; errors
// come from the errs table by model name.
type backend struct {
	live, ready bool

	mu        sync.Mutex
	calls     int
	authority []string
	lastReq   *oip.InferenceRequest
}

var backendErrs = map[string]error{
	"invalid":     forecast.FieldErrorf(forecast.EINVALID, "history", "history has 3 values, want 336"),
	"missing":     forecast.Errorf(forecast.ENOTFOUND, "no model %q", "missing"),
	"busy":        forecast.Errorf(forecast.EUNAVAILABLE, "model is loading"),
	"forbidden":   forecast.Errorf(forecast.EUNAUTHORIZED, "no"),
	"boom":        errors.New("database password is hunter2"),
	"ctxdeadline": fmt.Errorf("upstream: %w", context.DeadlineExceeded),
}

func (b *backend) ServerMetadata(ctx context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: "test", Version: "1.2.3", Extensions: []string{"binary_tensor_data"}}, nil
}
func (b *backend) ServerLive(ctx context.Context) (bool, error)  { return b.live, nil }
func (b *backend) ServerReady(ctx context.Context) (bool, error) { return b.ready, nil }

func (b *backend) ModelReady(ctx context.Context, model, version string) (bool, error) {
	if err := backendErrs[model]; err != nil {
		return false, err
	}
	return model != "down", nil
}

func (b *backend) ModelMetadata(ctx context.Context, model, version string) (oip.ModelMetadata, error) {
	if err := backendErrs[model]; err != nil {
		return oip.ModelMetadata{}, err
	}
	return oip.Contract{Lookback: 336, Horizon: 96}.Metadata(model, []string{"1"}, "carbongate"), nil
}

func (b *backend) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	b.mu.Lock()
	b.calls++
	b.authority = md[":authority"]
	b.lastReq = req
	b.mu.Unlock()
	if err := backendErrs[model]; err != nil {
		return nil, err
	}
	switch model {
	case "panic":
		panic("backend bug")
	case "blocked":
		<-ctx.Done()
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "gave up")
	case "bad-output":
		return &oip.InferenceResponse{Outputs: []oip.Tensor{{Name: "y", Datatype: oip.FP32, Shape: []int64{2}, FP32: []float32{1}}}}, nil
	case "down":
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "model %q is not ready", model)
	}
	outs := make([]oip.Tensor, len(req.Inputs))
	copy(outs, req.Inputs)
	return &oip.InferenceResponse{ModelVersion: version, Parameters: oip.Parameters{"echo": true}, Outputs: outs}, nil
}

func (b *backend) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// serve starts s on a loopback listener and returns its address; the
// server stops when the test ends.
func serve(tb testing.TB, s *grpc.Server) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	tb.Cleanup(func() { s.Stop(); <-done })
	return lis.Addr().String()
}

// start serves b with NewServer and returns a connected client.
func start(tb testing.TB, b oip.Backend, sopts []oipgrpc.ServerOption, copts ...oipgrpc.ClientOption) *oipgrpc.Client {
	tb.Helper()
	addr := serve(tb, oipgrpc.NewServer(b, append([]oipgrpc.ServerOption{oipgrpc.ServerLogger(quietLog)}, sopts...)...))
	c, err := oipgrpc.NewClient(addr, copts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// stub returns a bare generated client to addr, to send what our client
// never would.
func stub(tb testing.TB, addr string) pb.GRPCInferenceServiceClient {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return pb.NewGRPCInferenceServiceClient(conn)
}

// allTypes is one tensor of every supported datatype, with edge values.
func allTypes() []oip.Tensor {
	return []oip.Tensor{
		{Name: "fp32", Datatype: oip.FP32, Shape: []int64{1, 3}, FP32: []float32{1.5, -0, float32(math.Inf(1))}},
		{Name: "fp64", Datatype: oip.FP64, Shape: []int64{2}, FP64: []float64{math.Pi, -1e300}},
		{Name: "int64", Datatype: oip.INT64, Shape: []int64{2, 1}, INT64: []int64{math.MinInt64, math.MaxInt64}},
		{Name: "int32", Datatype: oip.INT32, Shape: []int64{2}, INT32: []int32{math.MinInt32, math.MaxInt32}},
		{Name: "int16", Datatype: oip.INT16, Shape: []int64{2}, INT32: []int32{math.MinInt16, math.MaxInt16}},
		{Name: "int8", Datatype: oip.INT8, Shape: []int64{3}, INT32: []int32{math.MinInt8, 0, math.MaxInt8}},
		{Name: "uint8", Datatype: oip.UINT8, Shape: []int64{2}, UINT64: []uint64{0, math.MaxUint8}},
		{Name: "uint16", Datatype: oip.UINT16, Shape: []int64{1}, UINT64: []uint64{math.MaxUint16}},
		{Name: "uint32", Datatype: oip.UINT32, Shape: []int64{1}, UINT64: []uint64{math.MaxUint32}},
		{Name: "uint64", Datatype: oip.UINT64, Shape: []int64{1}, UINT64: []uint64{math.MaxUint64}},
		{Name: "bool", Datatype: oip.BOOL, Shape: []int64{2}, BOOL: []bool{true, false}, Parameters: oip.Parameters{"p": "q"}},
		{Name: "empty", Datatype: oip.FP32, Shape: []int64{0, 4}},
	}
}

func withBytes(ts []oip.Tensor) []oip.Tensor {
	return append(ts, oip.Tensor{Name: "bytes", Datatype: oip.BYTES, Shape: []int64{3}, BYTES: [][]byte{[]byte("ab"), {}, {0, 1, 2}}})
}

// normalize makes empty data slices nil so that raw and contents decode
// compare equal.
func normalize(ts []oip.Tensor) []oip.Tensor {
	out := make([]oip.Tensor, len(ts))
	for i, t := range ts {
		if t.Len() == 0 {
			t.FP32, t.FP64, t.INT64, t.INT32, t.UINT64, t.BOOL, t.BYTES = nil, nil, nil, nil, nil, nil, nil
		}
		for j := range t.BYTES {
			if len(t.BYTES[j]) == 0 {
				t.BYTES[j] = []byte{}
			}
		}
		out[i] = t
	}
	return out
}

func TestInferRoundTrip(t *testing.T) {
	t.Parallel()
	b := &backend{live: true, ready: true}
	tests := []struct {
		name   string
		opts   []oipgrpc.ClientOption
		inputs []oip.Tensor
		params oip.Parameters
	}{
		{name: "raw (default) every fixed-width type", inputs: allTypes()},
		{name: "contents every type", opts: []oipgrpc.ClientOption{oipgrpc.WithContents()}, inputs: withBytes(allTypes())},
		{name: "BYTES input falls back to contents", inputs: withBytes(allTypes())},
		{name: "contents in, raw out by parameter", opts: []oipgrpc.ClientOption{oipgrpc.WithContents()}, inputs: allTypes(),
			params: oip.Parameters{oipgrpc.ParamBinaryDataOutput: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := start(t, b, nil, tt.opts...)
			req := &oip.InferenceRequest{ID: "req-1", Parameters: tt.params, Inputs: tt.inputs,
				Outputs: []oip.RequestedOutput{{Name: "fp32", Parameters: oip.Parameters{"n": int64(3), "f": 2.5, "i": 4.0}}}}
			resp, err := c.Infer(t.Context(), "echo", "7", req)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := resp.ID, "req-1"; got != want {
				t.Errorf("ID=%q, want %q", got, want)
			}
			if got, want := resp.ModelName, "echo"; got != want {
				t.Errorf("ModelName=%q, want %q", got, want)
			}
			if got, want := resp.ModelVersion, "7"; got != want {
				t.Errorf("ModelVersion=%q, want %q", got, want)
			}
			if got, want := resp.Parameters, (oip.Parameters{"echo": true}); !reflect.DeepEqual(got, want) {
				t.Errorf("Parameters=%v, want %v", got, want)
			}
			if got, want := normalize(resp.Outputs), normalize(tt.inputs); !reflect.DeepEqual(got, want) {
				t.Errorf("outputs differ from inputs:\n got %+v\nwant %+v", got, want)
			}
			b.mu.Lock()
			got := b.lastReq.Outputs
			b.mu.Unlock()
			want := []oip.RequestedOutput{{Name: "fp32", Parameters: oip.Parameters{"n": int64(3), "f": "2.5", "i": int64(4)}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("requested outputs at the server %v, want %v", got, want)
			}
		})
	}
}

// TestInferWireForm checks which form the server answers in, with a bare
// generated client.
func TestInferWireForm(t *testing.T) {
	t.Parallel()
	addr := serve(t, oipgrpc.NewServer(&backend{}, oipgrpc.ServerLogger(quietLog)))
	s := stub(t, addr)
	in := func() *pb.ModelInferRequest_InferInputTensor {
		return &pb.ModelInferRequest_InferInputTensor{Name: "x", Datatype: "FP32", Shape: []int64{1, 2}}
	}
	raw := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40} // 1.0, 2.0
	tests := []struct {
		name    string
		req     *pb.ModelInferRequest
		wantRaw bool
	}{
		{"raw in, raw out", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{in()}, RawInputContents: [][]byte{raw}}, true},
		{"contents in, contents out", &pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{func() *pb.ModelInferRequest_InferInputTensor {
			x := in()
			x.Contents = &pb.InferTensorContents{Fp32Contents: []float32{1, 2}}
			return x
		}()}}, false},
		{"contents in, raw asked", &pb.ModelInferRequest{ModelName: "echo",
			Parameters: map[string]*pb.InferParameter{"binary_data_output": {ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: true}}},
			Inputs: []*pb.ModelInferRequest_InferInputTensor{func() *pb.ModelInferRequest_InferInputTensor {
				x := in()
				x.Contents = &pb.InferTensorContents{Fp32Contents: []float32{1, 2}}
				return x
			}()}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := s.ModelInfer(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantRaw {
				if got, want := resp.GetRawOutputContents(), [][]byte{raw}; !reflect.DeepEqual(got, want) {
					t.Errorf("raw_output_contents=%v, want %v", got, want)
				}
				if resp.GetOutputs()[0].GetContents() != nil {
					t.Errorf("contents set alongside raw")
				}
			} else {
				if len(resp.GetRawOutputContents()) != 0 {
					t.Errorf("raw_output_contents set")
				}
				if got, want := resp.GetOutputs()[0].GetContents().GetFp32Contents(), []float32{1, 2}; !reflect.DeepEqual(got, want) {
					t.Errorf("fp32_contents=%v, want %v", got, want)
				}
			}
		})
	}
}

// fakeServer answers every RPC with what its fields say, to test the
// client against servers that behave unlike ours (Triton, KServe, broken).
type fakeServer struct {
	pb.UnimplementedGRPCInferenceServiceServer
	infer *pb.ModelInferResponse
	err   error
}

func (f *fakeServer) ModelInfer(context.Context, *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	return f.infer, f.err
}
func (f *fakeServer) ServerLive(context.Context, *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	return &pb.ServerLiveResponse{Live: true}, f.err
}

func fakeClient(t *testing.T, f *fakeServer) *oipgrpc.Client {
	t.Helper()
	s := grpc.NewServer()
	pb.RegisterGRPCInferenceServiceServer(s, f)
	c, err := oipgrpc.NewClient(serve(t, s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var fcReq = &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP32, Shape: []int64{1}, FP32: []float32{1}}}}

func outTensor(name, dt string, shape []int64, c *pb.InferTensorContents) *pb.ModelInferResponse_InferOutputTensor {
	return &pb.ModelInferResponse_InferOutputTensor{Name: name, Datatype: dt, Shape: shape, Contents: c}
}

func TestClientDecodesResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resp     *pb.ModelInferResponse
		want     []oip.Tensor
		wantCode string
	}{
		{name: "raw (Triton style)", resp: &pb.ModelInferResponse{
			Outputs:           []*pb.ModelInferResponse_InferOutputTensor{outTensor("y", "FP32", []int64{1, 2}, nil), outTensor("s", "BYTES", []int64{2}, nil)},
			RawOutputContents: [][]byte{{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40}, {1, 0, 0, 0, 'a', 0, 0, 0, 0}},
		}, want: []oip.Tensor{
			{Name: "y", Datatype: oip.FP32, Shape: []int64{1, 2}, FP32: []float32{1, 2}},
			{Name: "s", Datatype: oip.BYTES, Shape: []int64{2}, BYTES: [][]byte{[]byte("a"), {}}},
		}},
		{name: "contents", resp: &pb.ModelInferResponse{Outputs: []*pb.ModelInferResponse_InferOutputTensor{
			outTensor("y", "INT64", []int64{2}, &pb.InferTensorContents{Int64Contents: []int64{5, -6}}),
			outTensor("u", "UINT16", []int64{1}, &pb.InferTensorContents{UintContents: []uint32{65535}}),
		}}, want: []oip.Tensor{
			{Name: "y", Datatype: oip.INT64, Shape: []int64{2}, INT64: []int64{5, -6}},
			{Name: "u", Datatype: oip.UINT16, Shape: []int64{1}, UINT64: []uint64{65535}},
		}},
		{name: "raw too short", resp: &pb.ModelInferResponse{
			Outputs: []*pb.ModelInferResponse_InferOutputTensor{outTensor("y", "FP32", []int64{1, 2}, nil)}, RawOutputContents: [][]byte{{0, 0, 0x80, 0x3f}},
		}, wantCode: forecast.EINTERNAL},
		{name: "raw count mismatch", resp: &pb.ModelInferResponse{
			Outputs: []*pb.ModelInferResponse_InferOutputTensor{outTensor("y", "FP32", []int64{1}, nil), outTensor("z", "FP32", []int64{1}, nil)}, RawOutputContents: [][]byte{{0, 0, 0, 0}},
		}, wantCode: forecast.EINTERNAL},
		{name: "contents count mismatch", resp: &pb.ModelInferResponse{Outputs: []*pb.ModelInferResponse_InferOutputTensor{
			outTensor("y", "FP32", []int64{3}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}}, wantCode: forecast.EINTERNAL},
		{name: "contents in the wrong field", resp: &pb.ModelInferResponse{Outputs: []*pb.ModelInferResponse_InferOutputTensor{
			outTensor("y", "FP32", []int64{1}, &pb.InferTensorContents{Fp64Contents: []float64{1}})}}, wantCode: forecast.EINTERNAL},
		{name: "unknown datatype", resp: &pb.ModelInferResponse{Outputs: []*pb.ModelInferResponse_InferOutputTensor{
			outTensor("y", "FP8", []int64{1}, nil)}}, wantCode: forecast.EINTERNAL},
		{name: "duplicate outputs", resp: &pb.ModelInferResponse{Outputs: []*pb.ModelInferResponse_InferOutputTensor{
			outTensor("y", "INT64", []int64{1}, &pb.InferTensorContents{Int64Contents: []int64{1}}),
			outTensor("y", "INT64", []int64{1}, &pb.InferTensorContents{Int64Contents: []int64{1}})}}, wantCode: forecast.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fakeClient(t, &fakeServer{infer: tt.resp})
			resp, err := c.Infer(t.Context(), "m", "", fcReq)
			if got, want := forecast.ErrorCode(err), tt.wantCode; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
			if err != nil {
				return
			}
			if got, want := normalize(resp.Outputs), normalize(tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("outputs=%+v, want %+v", got, want)
			}
		})
	}
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	c := start(t, &backend{live: true, ready: true}, nil)
	tests := []struct {
		model       string
		wantCode    string
		wantMessage string
		wantCtx     bool
	}{
		{model: "invalid", wantCode: forecast.EINVALID, wantMessage: "history has 3 values, want 336"},
		{model: "missing", wantCode: forecast.ENOTFOUND, wantMessage: `no model "missing"`},
		{model: "busy", wantCode: forecast.EUNAVAILABLE, wantMessage: "ModelInfer: model is loading"},
		{model: "down", wantCode: forecast.EUNAVAILABLE, wantMessage: `ModelInfer: model "down" is not ready`},
		{model: "forbidden", wantCode: forecast.EUNAUTHORIZED, wantMessage: "no"},
		{model: "boom", wantCode: forecast.EINTERNAL, wantMessage: "internal error"},
		{model: "panic", wantCode: forecast.EINTERNAL, wantMessage: "internal error"},
		{model: "bad-output", wantCode: forecast.EINTERNAL, wantMessage: "internal error"},
		{model: "ctxdeadline", wantCode: forecast.EUNAVAILABLE, wantMessage: "ModelInfer: deadline exceeded", wantCtx: true},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			t.Parallel()
			_, err := c.Infer(t.Context(), tt.model, "", fcReq)
			if got, want := forecast.ErrorCode(err), tt.wantCode; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
			if got, want := forecast.ErrorMessage(err), tt.wantMessage; got != want {
				t.Errorf("message=%q, want %q", got, want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("internal error leaked to the client: %v", err)
			}
			if _, ok := status.FromError(errors.Unwrap(err)); !ok {
				t.Errorf("status error not in the chain of %v", err)
			}
			if got, want := errors.Is(err, context.DeadlineExceeded), tt.wantCtx; got != want {
				t.Errorf("errors.Is(err, DeadlineExceeded)=%v, want %v", got, want)
			}
		})
	}
	// The same mapping holds for metadata and readiness.
	if _, err := c.ModelMetadata(t.Context(), "missing", ""); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Errorf("ModelMetadata(missing) err=%v, want ENOTFOUND", err)
	}
	if err := c.ModelReady(t.Context(), "missing", ""); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Errorf("ModelReady(missing) err=%v, want ENOTFOUND", err)
	}
}

// TestClientStatusMapping covers codes our server never sends.
func TestClientStatusMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code     codes.Code
		wantCode string
	}{
		{codes.InvalidArgument, forecast.EINVALID},
		{codes.NotFound, forecast.ENOTFOUND},
		{codes.Unavailable, forecast.EUNAVAILABLE},
		{codes.DeadlineExceeded, forecast.EUNAVAILABLE},
		{codes.ResourceExhausted, forecast.EUNAVAILABLE},
		{codes.Aborted, forecast.EUNAVAILABLE},
		{codes.FailedPrecondition, forecast.EUNAVAILABLE},
		{codes.Unimplemented, forecast.EINVALID},
		{codes.Unauthenticated, forecast.EUNAUTHORIZED},
		{codes.PermissionDenied, forecast.EUNAUTHORIZED},
		{codes.Internal, forecast.EINTERNAL},
		{codes.Unknown, forecast.EINTERNAL},
		{codes.DataLoss, forecast.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			t.Parallel()
			c := fakeClient(t, &fakeServer{err: status.Error(tt.code, "nope")})
			_, err := c.Infer(t.Context(), "m", "", fcReq)
			if got, want := forecast.ErrorCode(err), tt.wantCode; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
			if got, want := status.Code(errors.Unwrap(err)) == tt.code || errors.Is(err, context.DeadlineExceeded), true; got != want {
				t.Errorf("status %v not kept in %v", tt.code, err)
			}
		})
	}
	// A server without the RPC at all.
	c := fakeClient(t, &fakeServer{})
	err := c.ServerReady(t.Context())
	if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
		t.Fatalf("code=%q, want %q", got, want)
	}
	if !strings.Contains(forecast.ErrorMessage(err), "does not implement ServerReady") {
		t.Errorf("message=%q, want it to name the RPC", forecast.ErrorMessage(err))
	}
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	b := &backend{}
	s := stub(t, serve(t, oipgrpc.NewServer(b, oipgrpc.ServerLogger(quietLog))))
	in := func(name, dt string, shape []int64, c *pb.InferTensorContents) *pb.ModelInferRequest_InferInputTensor {
		return &pb.ModelInferRequest_InferInputTensor{Name: name, Datatype: dt, Shape: shape, Contents: c}
	}
	type ins = []*pb.ModelInferRequest_InferInputTensor
	tests := []struct {
		name string
		req  *pb.ModelInferRequest
	}{
		{"raw too short", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1, 336}, nil)}, RawInputContents: [][]byte{make([]byte, 4*335)}}},
		{"raw too long", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1, 336}, nil)}, RawInputContents: [][]byte{make([]byte, 4*336+1)}}},
		{"raw INT64 of FP32 size", &pb.ModelInferRequest{Inputs: ins{in("x", "INT64", []int64{1, 2}, nil)}, RawInputContents: [][]byte{make([]byte, 8)}}},
		{"raw count mismatch", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1}, nil), in("y", "FP32", []int64{1}, nil)}, RawInputContents: [][]byte{make([]byte, 4)}}},
		{"raw and contents", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}, RawInputContents: [][]byte{make([]byte, 4)}}},
		{"raw BYTES bad prefix", &pb.ModelInferRequest{Inputs: ins{in("x", "BYTES", []int64{1}, nil)}, RawInputContents: [][]byte{{9, 0, 0, 0, 'a'}}}},
		{"raw BYTES truncated prefix", &pb.ModelInferRequest{Inputs: ins{in("x", "BYTES", []int64{2}, nil)}, RawInputContents: [][]byte{{1, 0, 0, 0, 'a', 1, 0}}}},
		{"raw BYTES too many", &pb.ModelInferRequest{Inputs: ins{in("x", "BYTES", []int64{1}, nil)}, RawInputContents: [][]byte{{0, 0, 0, 0, 0, 0, 0, 0}}}},
		{"huge shape, small raw", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1 << 40, 1 << 40}, nil)}, RawInputContents: [][]byte{make([]byte, 4)}}},
		{"huge shape overflowing int64", &pb.ModelInferRequest{Inputs: ins{in("x", "UINT8", []int64{math.MaxInt64, math.MaxInt64, 2}, nil)}, RawInputContents: [][]byte{{1}}}},
		{"negative dimension", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{-1, 1}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}}},
		{"contents too few", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{2}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}}},
		{"contents missing", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{2}, nil)}}},
		{"contents in two fields", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1}, &pb.InferTensorContents{Fp32Contents: []float32{1}, Int64Contents: []int64{1}})}}},
		{"INT8 out of range", &pb.ModelInferRequest{Inputs: ins{in("x", "INT8", []int64{1}, &pb.InferTensorContents{IntContents: []int32{300}})}}},
		{"UINT8 out of range", &pb.ModelInferRequest{Inputs: ins{in("x", "UINT8", []int64{1}, &pb.InferTensorContents{UintContents: []uint32{256}})}}},
		{"FP16 unsupported", &pb.ModelInferRequest{Inputs: ins{in("x", "FP16", []int64{1}, nil)}, RawInputContents: [][]byte{{0, 0}}}},
		{"unknown datatype", &pb.ModelInferRequest{Inputs: ins{in("x", "COMPLEX", []int64{1}, nil)}}},
		{"no tensor name", &pb.ModelInferRequest{Inputs: ins{in("", "FP32", []int64{1}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}}},
		{"duplicate inputs", &pb.ModelInferRequest{Inputs: ins{in("x", "FP32", []int64{1}, &pb.InferTensorContents{Fp32Contents: []float32{1}}), in("x", "FP32", []int64{1}, &pb.InferTensorContents{Fp32Contents: []float32{1}})}}},
		{"duplicate outputs", &pb.ModelInferRequest{Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "y"}, {Name: "y"}}}},
		{"nil input tensor", &pb.ModelInferRequest{Inputs: ins{nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.req.ModelName = "echo"
			_, err := s.ModelInfer(t.Context(), tt.req)
			if got, want := status.Code(err), codes.InvalidArgument; got != want {
				t.Fatalf("code=%v (%v), want %v", got, err, want)
			}
		})
	}
	_, err := s.ModelInfer(t.Context(), &pb.ModelInferRequest{})
	if got, want := status.Code(err), codes.InvalidArgument; got != want {
		t.Errorf("empty model name: code=%v, want %v", got, want)
	}
	if got := b.Calls(); got != 0 {
		t.Errorf("backend called %d times with malformed requests", got)
	}
}

func TestClientRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	b := &backend{}
	c := start(t, b, nil)
	tests := []struct {
		name string
		req  *oip.InferenceRequest
	}{
		{"nil", nil},
		{"data shorter than shape", &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP32, Shape: []int64{2}, FP32: []float32{1}}}}},
		{"FP16", &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP16, Shape: []int64{1}}}}},
		{"parameter type", &oip.InferenceRequest{Parameters: oip.Parameters{"x": []int{1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Infer(t.Context(), "echo", "", tt.req)
			if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
		})
	}
	if got := b.Calls(); got != 0 {
		t.Errorf("backend called %d times", got)
	}
}

func TestMetadataAndReadiness(t *testing.T) {
	t.Parallel()
	for _, up := range []bool{true, false} {
		t.Run(fmt.Sprint("up=", up), func(t *testing.T) {
			t.Parallel()
			c := start(t, &backend{live: up, ready: up}, nil)
			wantCode := ""
			if !up {
				wantCode = forecast.EUNAVAILABLE
			}
			if got := forecast.ErrorCode(c.ServerLive(t.Context())); got != wantCode {
				t.Errorf("ServerLive code=%q, want %q", got, wantCode)
			}
			if got := forecast.ErrorCode(c.ServerReady(t.Context())); got != wantCode {
				t.Errorf("ServerReady code=%q, want %q", got, wantCode)
			}
		})
	}
	c := start(t, &backend{live: true, ready: true}, nil)
	if err := c.ModelReady(t.Context(), "echo", ""); err != nil {
		t.Errorf("ModelReady(echo)=%v, want nil", err)
	}
	if got, want := forecast.ErrorCode(c.ModelReady(t.Context(), "down", "")), forecast.EUNAVAILABLE; got != want {
		t.Errorf("ModelReady(down) code=%q, want %q", got, want)
	}
	if got, want := forecast.ErrorCode(c.ModelReady(t.Context(), "", "")), forecast.EINVALID; got != want {
		t.Errorf("ModelReady(\"\") code=%q, want %q", got, want)
	}
	sm, err := c.ServerMetadata(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sm, (oip.ServerMetadata{Name: "test", Version: "1.2.3", Extensions: []string{"binary_tensor_data"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("ServerMetadata=%+v, want %+v", got, want)
	}
	md, err := c.ModelMetadata(t.Context(), "zone-de", "1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := md, (oip.Contract{Lookback: 336, Horizon: 96}).Metadata("zone-de", []string{"1"}, "carbongate"); !reflect.DeepEqual(got, want) {
		t.Errorf("ModelMetadata=%+v, want %+v", got, want)
	}
	if got, err := oip.ContractOf(md); err != nil || got != (oip.Contract{Lookback: 336, Horizon: 96}) {
		t.Errorf("ContractOf=%v, %v", got, err)
	}
}

func TestAuthority(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts []oipgrpc.ClientOption
		want string // "" = the dialled address
	}{
		{name: "default"},
		{name: "override", opts: []oipgrpc.ClientOption{oipgrpc.WithAuthority("zone-de.carbongate.example.com")}, want: "zone-de.carbongate.example.com"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := &backend{}
			s := oipgrpc.NewServer(b, oipgrpc.ServerLogger(quietLog))
			addr := serve(t, s)
			c, err := oipgrpc.NewClient(addr, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Infer(t.Context(), "echo", "", fcReq); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = addr
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if got := b.authority; !reflect.DeepEqual(got, []string{want}) {
				t.Errorf(":authority=%q, want %q", got, want)
			}
		})
	}
}

func TestDeadlines(t *testing.T) {
	t.Parallel()
	b := &backend{}
	tests := []struct {
		name string
		opts []oipgrpc.ClientOption
		ctx  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{name: "default timeout option", opts: []oipgrpc.ClientOption{oipgrpc.WithTimeout(50 * time.Millisecond)}},
		{name: "ctx deadline wins over the option", opts: []oipgrpc.ClientOption{oipgrpc.WithTimeout(time.Hour)},
			ctx: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 50*time.Millisecond)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := start(t, b, nil, tt.opts...)
			ctx := t.Context()
			if tt.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tt.ctx(ctx)
				defer cancel()
			}
			t0 := time.Now()
			_, err := c.Infer(ctx, "blocked", "", fcReq)
			if got, want := forecast.ErrorCode(err), forecast.EUNAVAILABLE; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("context.DeadlineExceeded not in the chain of %v", err)
			}
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("call took %v", d)
			}
		})
	}
	// A canceled context is kept too.
	c := start(t, b, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := c.Infer(ctx, "blocked", "", fcReq)
	if !errors.Is(err, context.Canceled) || forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Errorf("canceled call err=%v, want EUNAVAILABLE with context.Canceled", err)
	}
}

func TestMaxMessageSize(t *testing.T) {
	t.Parallel()
	c := start(t, &backend{}, []oipgrpc.ServerOption{oipgrpc.ServerMaxMessageSize(1024)})
	big := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP32, Shape: []int64{1024}, FP32: make([]float32, 1024)}}}
	_, err := c.Infer(t.Context(), "echo", "", big)
	if got, want := forecast.ErrorCode(err), forecast.EUNAVAILABLE; got != want {
		t.Fatalf("code=%q (%v), want %q", got, err, want)
	}
	if got, want := status.Code(errors.Unwrap(err)), codes.ResourceExhausted; got != want {
		t.Errorf("status=%v, want %v", got, want)
	}
	if _, err := c.Infer(t.Context(), "echo", "", fcReq); err != nil {
		t.Errorf("small request: %v", err)
	}
}

func TestDial(t *testing.T) {
	t.Parallel()
	addr := serve(t, oipgrpc.NewServer(&backend{live: true}, oipgrpc.ServerLogger(quietLog)))
	c, err := oipgrpc.Dial(t.Context(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ServerLive(t.Context()); err != nil {
		t.Error(err)
	}
	c.Close()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err = oipgrpc.Dial(ctx, dead)
	if got, want := forecast.ErrorCode(err), forecast.EUNAVAILABLE; got != want {
		t.Fatalf("Dial(dead) code=%q (%v), want %q", got, err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context.DeadlineExceeded not in %v", err)
	}
	if _, err := oipgrpc.NewClient(""); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Errorf("NewClient(\"\") err=%v, want EINVALID", err)
	}
}

// FuzzModelInfer feeds arbitrary bytes as a serialized ModelInferRequest
// to the server's decoding: it must answer or fail with a status, never
// panic (the server's panic guard would hide a panic, so the fuzz target
// calls a server whose logger fails the test on any panic record).
//
// fuzz budget: 8000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzModelInfer(f *testing.F) {
	seed := func(r *pb.ModelInferRequest) {
		b, err := protoMarshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(&pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 2}}}, RawInputContents: [][]byte{make([]byte, 8)}})
	seed(&pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "s", Datatype: "BYTES", Shape: []int64{2}}}, RawInputContents: [][]byte{{1, 0, 0, 0, 'a', 0, 0, 0, 0}}})
	seed(&pb.ModelInferRequest{ModelName: "echo", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "u", Datatype: "UINT16", Shape: []int64{1}, Contents: &pb.InferTensorContents{UintContents: []uint32{7}}}}})
	panics := &panicHandler{}
	s := stub(f, serve(f, oipgrpc.NewServer(&backend{}, oipgrpc.ServerLogger(slog.New(panics)))))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r pb.ModelInferRequest
		if protoUnmarshal(data, &r) != nil {
			return
		}
		r.ModelName = "echo"
		_, err := s.ModelInfer(t.Context(), &r)
		if status.Code(err) == codes.Internal || panics.seen() {
			t.Fatalf("ModelInfer(%v): %v", &r, err)
		}
	})
}

type panicHandler struct {
	mu    sync.Mutex
	panic bool
}

func (h *panicHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *panicHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.panic = h.panic || strings.Contains(r.Message, "panic")
	return nil
}
func (h *panicHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *panicHandler) WithGroup(string) slog.Handler      { return h }
func (h *panicHandler) seen() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.panic
}
