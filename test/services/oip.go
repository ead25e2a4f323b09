package services

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Opts configures a Python OIP peer serving the seasonal-naive forecaster
// of test/python (forecaster tensor contract, L=168, H=96 by default).
type Opts struct {
	// Model is the OIP model name (default "forecaster").
	Model string
	// NotReady keeps the model "not ready" this long after start
	// (FORECASTER_NOT_READY_SECONDS): KServe reports the model not ready and
	// refuses inference; MLServer is still inside the model's load().
	NotReady time.Duration
	// Slow makes every inference sleep this long (FORECASTER_SLOW_SECONDS).
	Slow time.Duration
	// Lookback and Horizon override L and H (0: 168 and 96).
	Lookback, Horizon int
	// Env adds environment variables to the process.
	Env []string
	// StartTimeout bounds the wait for readiness (default
	// DefaultStartTimeout).
	StartTimeout time.Duration
}

func (o Opts) model() string {
	if o.Model == "" {
		return "forecaster"
	}
	return o.Model
}

func (o Opts) env() []string {
	env := []string{
		"FORECASTER_NOT_READY_SECONDS=" + seconds(o.NotReady),
		"FORECASTER_SLOW_SECONDS=" + seconds(o.Slow),
	}
	if o.Lookback > 0 {
		env = append(env, "FORECASTER_LOOKBACK="+strconv.Itoa(o.Lookback))
	}
	if o.Horizon > 0 {
		env = append(env, "FORECASTER_HORIZON="+strconv.Itoa(o.Horizon))
	}
	return append(env, o.Env...)
}

// OIPServer is a running OIP peer.
type OIPServer struct {
	*Proc
	// RESTURL is the REST base URL, e.g. "http://127.0.0.1:41234".
	RESTURL string
	// GRPCAddr is the gRPC target, e.g. "127.0.0.1:41235".
	GRPCAddr string
	// Model is the name the model is served under.
	Model string
}

// readyCheck waits for: server live (REST 200), the gRPC port open and,
// unless the model starts not ready on purpose, the model ready (REST 200).
func readyCheck(rest, grpcAddr, model string, waitModel bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := wantStatus(ctx, rest+"/v2/health/live", http.StatusOK); err != nil {
			return err
		}
		if err := tcpOpen(ctx, grpcAddr); err != nil {
			return fmt.Errorf("gRPC port: %w", err)
		}
		if waitModel {
			return wantStatus(ctx, rest+"/v2/models/"+model+"/ready", http.StatusOK)
		}
		return nil
	}
}

// StartKServe starts test/python/kserve_forecaster.py (KServe's Python
// ModelServer, kserve 0.20.0) with REST and gRPC on free loopback ports.
// It returns once the server is live, gRPC accepts connections and — when
// opts.NotReady is zero — the model is ready.
func StartKServe(tb testing.TB, opts Opts) *OIPServer {
	tb.Helper()
	venv := Venv(tb, KServeEnv)
	script := filepath.Join(PythonDir(tb), "kserve_forecaster.py")
	srv := &OIPServer{Model: opts.model()}
	srv.Proc = start(tb, opts.StartTimeout, func() spec {
		hp, gp := FreePort(tb), FreePort(tb)
		srv.RESTURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(hp))
		srv.GRPCAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(gp))
		return spec{
			name: "kserve-" + srv.Model,
			dir:  tb.TempDir(),
			path: filepath.Join(venv, "bin", "python"),
			args: []string{script, "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp),
				"--model_name", srv.Model, "--enable_latency_logging", "false"},
			env:   append(append(pythonEnv(tb), "FORECASTER_BIND_HOST=127.0.0.1"), opts.env()...),
			ready: readyCheck(srv.RESTURL, srv.GRPCAddr, srv.Model, opts.NotReady == 0),
		}
	})
	return srv
}

// StartMLServer starts MLServer 1.7.1 with the custom runtime in
// test/python/mlserver_forecaster (copied to a temp dir, the model name
// written into its model-settings.json: MLServer lets the file win over
// MLSERVER_MODEL_NAME) with REST and gRPC on free loopback ports. It
// returns once the server is live, gRPC accepts connections and — when
// opts.NotReady is zero — the model is ready.
func StartMLServer(tb testing.TB, opts Opts) *OIPServer {
	tb.Helper()
	venv := Venv(tb, MLServerEnv)
	src := filepath.Join(PythonDir(tb), "mlserver_forecaster")
	dir := tb.TempDir()
	for _, name := range []string{"settings.json", "runtime.py"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			tb.Fatalf("services: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			tb.Fatalf("services: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "model-settings.json"))
	if err != nil {
		tb.Fatalf("services: %v", err)
	}
	var ms map[string]any
	if err := json.Unmarshal(b, &ms); err != nil {
		tb.Fatalf("services: model-settings.json: %v", err)
	}
	ms["name"] = opts.model()
	if opts.Lookback > 0 || opts.Horizon > 0 {
		l, h := opts.Lookback, opts.Horizon
		if l == 0 {
			l = 168
		}
		if h == 0 {
			h = 96
		}
		ms["inputs"] = []any{
			map[string]any{"name": "history", "datatype": "FP32", "shape": []int{-1, l}},
			map[string]any{"name": "start_unix", "datatype": "INT64", "shape": []int{-1, 1}},
		}
		ms["outputs"] = []any{map[string]any{"name": "forecast", "datatype": "FP32", "shape": []int{-1, h}}}
	}
	if b, err = json.MarshalIndent(ms, "", "  "); err != nil {
		tb.Fatalf("services: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model-settings.json"), b, 0o644); err != nil {
		tb.Fatalf("services: %v", err)
	}

	srv := &OIPServer{Model: opts.model()}
	srv.Proc = start(tb, opts.StartTimeout, func() spec {
		hp, gp, mp := FreePort(tb), FreePort(tb), FreePort(tb)
		srv.RESTURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(hp))
		srv.GRPCAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(gp))
		return spec{
			name: "mlserver-" + srv.Model,
			dir:  dir,
			path: filepath.Join(venv, "bin", "mlserver"),
			args: []string{"start", dir},
			env: append(append(pythonEnv(tb),
				"MLSERVER_HOST=127.0.0.1",
				"MLSERVER_HTTP_PORT="+strconv.Itoa(hp),
				"MLSERVER_GRPC_PORT="+strconv.Itoa(gp),
				"MLSERVER_METRICS_PORT="+strconv.Itoa(mp),
			), opts.env()...),
			ready: readyCheck(srv.RESTURL, srv.GRPCAddr, srv.Model, opts.NotReady == 0),
		}
	})
	return srv
}
