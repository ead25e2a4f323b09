// Package remotetest serves small forecaster models over the real OIP
// transports (oip/rest and oip/grpc on loopback) for tests of the gateway's
// remote steps, and lets a test make them misbehave: down, not ready for a
// while, hanging, answering the wrong shape or datatype, or garbage.
package remotetest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/internal/retry"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
)

// Mode is how a Backend answers infer calls.
type Mode int

// Modes of a Backend.
const (
	OK            Mode = iota // a valid forecast
	Down                      // EUNAVAILABLE "model crashed" (503, UNAVAILABLE)
	Hang                      // no answer until the call's context ends
	WrongShape                // forecast FP32 [1, H-1]
	WrongDatatype             // forecast FP64 [1, H]
	Garbage                   // REST only: 200 with a body that is not JSON
)

// Backend is an oip.Backend serving one forecaster model with a constant
// forecast. Its behaviour can be changed while it serves.
type Backend struct {
	Model    string
	Contract oip.Contract
	Value    float64 // every forecast hour; default 100

	mu       sync.Mutex
	mode     Mode
	notReady int // answer "not ready" to this many next calls
	version  string
	delay    time.Duration
	stop     chan struct{}
	stopOnce sync.Once

	infers atomic.Int64
	metas  atomic.Int64
}

var _ oip.Backend = (*Backend)(nil)

// NewBackend returns a Backend of model with lookback l and horizon h,
// answering value, at version "1".
func NewBackend(model string, l, h int, value float64) *Backend {
	return &Backend{Model: model, Contract: oip.Contract{Lookback: l, Horizon: h}, Value: value, version: "1", stop: make(chan struct{})}
}

// SetMode changes how infer calls are answered.
func (b *Backend) SetMode(m Mode) { b.mu.Lock(); b.mode = m; b.mu.Unlock() }

// Mode returns the current mode.
func (b *Backend) Mode() Mode { b.mu.Lock(); defer b.mu.Unlock(); return b.mode }

// SetNotReady makes the next n calls (metadata or infer) answer "not ready".
func (b *Backend) SetNotReady(n int) { b.mu.Lock(); b.notReady = n; b.mu.Unlock() }

// SetDelay makes every infer call take at least d (ctx permitting).
func (b *Backend) SetDelay(d time.Duration) { b.mu.Lock(); b.delay = d; b.mu.Unlock() }

// SetVersion changes the model version the backend reports.
func (b *Backend) SetVersion(v string) { b.mu.Lock(); b.version = v; b.mu.Unlock() }

// Infers and Metadatas count the calls received.
func (b *Backend) Infers() int64    { return b.infers.Load() }
func (b *Backend) Metadatas() int64 { return b.metas.Load() }

// Release ends every hanging call (servers call it when they stop).
func (b *Backend) Release() { b.stopOnce.Do(func() { close(b.stop) }) }

func (b *Backend) state() (Mode, bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	nr := b.notReady > 0
	if nr {
		b.notReady--
	}
	return b.mode, nr, b.version
}

func (b *Backend) wait(ctx context.Context) error {
	b.mu.Lock()
	d := b.delay
	b.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return retry.Sleep(ctx, d)
}

func (b *Backend) notReadyErr() error {
	return forecast.Errorf(forecast.EUNAVAILABLE, "model %s is not ready", b.Model)
}

func (b *Backend) ServerMetadata(ctx context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: "remotetest", Version: "1"}, nil
}
func (b *Backend) ServerLive(ctx context.Context) (bool, error)  { return true, nil }
func (b *Backend) ServerReady(ctx context.Context) (bool, error) { return b.Mode() != Down, nil }

func (b *Backend) ModelReady(ctx context.Context, model, version string) (bool, error) {
	if model != b.Model {
		return false, forecast.Errorf(forecast.ENOTFOUND, "unknown model %s", model)
	}
	return b.Mode() != Down, nil
}

func (b *Backend) ModelMetadata(ctx context.Context, model, version string) (oip.ModelMetadata, error) {
	b.metas.Add(1)
	if model != b.Model {
		return oip.ModelMetadata{}, forecast.Errorf(forecast.ENOTFOUND, "unknown model %s", model)
	}
	mode, nr, v := b.state()
	switch {
	case nr:
		return oip.ModelMetadata{}, b.notReadyErr()
	case mode == Down:
		return oip.ModelMetadata{}, forecast.Errorf(forecast.EUNAVAILABLE, "model %s crashed", model)
	}
	return b.Contract.Metadata(b.Model, []string{v}, "carbongate-test"), nil
}

func (b *Backend) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	b.infers.Add(1)
	if model != b.Model {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "unknown model %s", model)
	}
	mode, nr, v := b.state()
	switch {
	case nr:
		return nil, b.notReadyErr()
	case mode == Down:
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "model %s crashed", model)
	case mode == Hang:
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.stop:
			return nil, forecast.Errorf(forecast.EUNAVAILABLE, "server stopping")
		}
	}
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	hist, _, err := oip.ParseForecastRequest(req, b.Contract)
	if err != nil {
		return nil, err
	}
	h := b.Contract.Horizon
	if mode == WrongShape {
		h--
	}
	rows := make([][]float64, len(hist))
	for i := range rows {
		rows[i] = make([]float64, h)
		for j := range rows[i] {
			rows[i][j] = b.Value
		}
	}
	resp := oip.NewForecastResponse(b.Model, v, req.ID, rows, nil, nil)
	if mode == WrongDatatype {
		t := &resp.Outputs[0]
		t.Datatype, t.FP64 = oip.FP64, make([]float64, len(t.FP32))
		for i, x := range t.FP32 {
			t.FP64[i] = float64(x)
		}
		t.FP32 = nil
	}
	return resp, nil
}

// Server is a Backend served on loopback.
type Server struct {
	Endpoint route.Endpoint
	close    func()
	once     sync.Once
}

// Close stops the server: connections are closed, hanging calls released.
// The endpoint then refuses connections. Safe to call more than once.
func (s *Server) Close() { s.once.Do(s.close) }

// ServeREST serves b with oip/rest on a loopback port until the test ends
// (or Close). The endpoint routes zone ("" = generic) to it.
func ServeREST(tb testing.TB, b *Backend, zone forecast.Zone) *Server {
	tb.Helper()
	h := rest.NewHandler(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.Mode() == Garbage && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/infer") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("<html>502 upstream gone {{{"))
			return
		}
		h.ServeHTTP(w, r)
	}))
	s := &Server{
		Endpoint: route.Endpoint{Zone: zone, Protocol: route.ProtocolREST, URL: srv.URL, Model: b.Model},
		close: func() {
			b.Release()
			srv.CloseClientConnections()
			srv.Close()
		},
	}
	tb.Cleanup(s.Close)
	return s
}

// ServeGRPC serves b with oip/grpc on a loopback port until the test ends
// (or Close).
func ServeGRPC(tb testing.TB, b *Backend, zone forecast.Zone) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	gs := oipgrpc.NewServer(b)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(ln)
	}()
	s := &Server{
		Endpoint: route.Endpoint{Zone: zone, Protocol: route.ProtocolGRPC, URL: ln.Addr().String(), Model: b.Model},
		close: func() {
			b.Release()
			gs.Stop()
			<-done
		},
	}
	tb.Cleanup(s.Close)
	return s
}
