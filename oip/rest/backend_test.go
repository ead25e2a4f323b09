package rest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// TestMain fails the package when goroutines outlive the tests (servers
// not closed, clients not closed).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		var left []string
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if left = leakedGoroutines(); len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			fmt.Fprintf(os.Stderr, "goroutine leak:\n%s\n", strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines returns the stacks of goroutines other than the main
// one and the runtime's or test framework's own.
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "TestMain"),
			strings.Contains(g, "os/signal."),
			strings.Contains(g, "testing.(*F)"),
			strings.Contains(g, "testing.runFuzz"),
			strings.Contains(g, "internal/fuzz."):
			continue
		}
		out = append(out, g)
	}
	return out
}

// testBackend is a small oip.Backend:
//
//	forecaster  the forecaster contract with L=4, H=3: forecast[i] = last + i + 1,
//	            lower/upper = forecast ∓ 1
//	big         the contract with L=336, H=96 (benchmarks)
//	echo        returns its inputs as outputs, any datatype
//	cold        exists, never ready
//	boom        fails with an unclassified error (500)
//	nan         forecaster that answers NaN
type testBackend struct {
	mu          sync.Mutex
	live, ready bool
	lastVersion string
	lastReq     *oip.InferenceRequest
}

func newTestBackend() *testBackend { return &testBackend{live: true, ready: true} }

var (
	smallContract = oip.Contract{Lookback: 4, Horizon: 3}
	bigContract   = oip.Contract{Lookback: 336, Horizon: 96}
)

func (b *testBackend) ServerMetadata(context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: "test", Version: "0.1", Extensions: []string{"binary_tensor_data"}}, nil
}

func (b *testBackend) ServerLive(context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live, nil
}

func (b *testBackend) ServerReady(context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready, nil
}

func (b *testBackend) ModelReady(_ context.Context, model, _ string) (bool, error) {
	switch model {
	case "forecaster", "big", "echo", "boom", "nan":
		return true, nil
	case "cold":
		return false, nil
	}
	return false, forecast.Errorf(forecast.ENOTFOUND, "model %q not found", model)
}

func (b *testBackend) ModelMetadata(_ context.Context, model, version string) (oip.ModelMetadata, error) {
	switch model {
	case "forecaster", "nan", "cold":
		return smallContract.Metadata(model, []string{"1"}, "test"), nil
	case "big":
		return bigContract.Metadata(model, []string{"1"}, "test"), nil
	case "echo", "boom":
		return oip.ModelMetadata{Name: model}, nil
	}
	return oip.ModelMetadata{}, forecast.Errorf(forecast.ENOTFOUND, "model %q not found", model)
}

func (b *testBackend) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	b.mu.Lock()
	b.lastVersion, b.lastReq = version, req
	b.mu.Unlock()
	switch model {
	case "forecaster", "big", "nan":
		c := smallContract
		if model == "big" {
			c = bigContract
		}
		hist, _, err := oip.ParseForecastRequest(req, c)
		if err != nil {
			return nil, err
		}
		fc := make([][]float64, len(hist))
		lo := make([][]float64, len(hist))
		hi := make([][]float64, len(hist))
		for i, h := range hist {
			last := h[len(h)-1]
			fc[i], lo[i], hi[i] = make([]float64, c.Horizon), make([]float64, c.Horizon), make([]float64, c.Horizon)
			for j := range fc[i] {
				fc[i][j] = last + float64(j+1)
				if model == "nan" {
					fc[i][j] = math.NaN()
				}
				lo[i][j], hi[i][j] = fc[i][j]-1, fc[i][j]+1
			}
		}
		return oip.NewForecastResponse(model, "1", "", fc, lo, hi), nil
	case "echo":
		resp := &oip.InferenceResponse{ModelName: model, Parameters: req.Parameters}
		resp.Outputs = append(resp.Outputs, req.Inputs...)
		return resp, nil
	case "cold":
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "model %q not ready", model)
	case "boom":
		return nil, errors.New("secret database password leaked in this message")
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, forecast.Errorf(forecast.ENOTFOUND, "model %q not found", model)
}

func (b *testBackend) setHealth(live, ready bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live, b.ready = live, ready
}

func (b *testBackend) last() (string, *oip.InferenceRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastVersion, b.lastReq
}

var _ oip.Backend = (*testBackend)(nil)

// code asserts err's code.
func code(tb testing.TB, err error, want string) {
	tb.Helper()
	if got := forecast.ErrorCode(err); got != want {
		tb.Fatalf("error code=%q (%v), want %q", got, err, want)
	}
}

func contains(tb testing.TB, err error, sub string) {
	tb.Helper()
	if err == nil || !strings.Contains(err.Error(), sub) {
		tb.Fatalf("error %v does not contain %q", err, sub)
	}
}
