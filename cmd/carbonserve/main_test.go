package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/carbongate/carbongate/cmd/internal/cli/clitest"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) {
	clitest.RunMain(main) // the CLI tests start this binary as the command
	os.Exit(testsupport.RunLeakChecked(m))
}

func noEnv(string) string { return "" }

// startMain runs carbonserve on ports 0 with args and waits for the first
// load.
func startMain(t *testing.T, env func(string) string, args ...string) (*Main, *testsupport.SyncBuffer) {
	t.Helper()
	m := NewMain()
	logs := &testsupport.SyncBuffer{}
	m.Stderr, m.Getenv = logs, env
	m.DrainDelay = 0
	if err := m.ParseFlags(append([]string{"--host", "127.0.0.1", "--http_port", "0", "--grpc_port", "0"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	select {
	case <-m.Loaded():
	case <-time.After(30 * time.Second):
		t.Fatal("models not loaded after 30s")
	}
	if err := m.LoadErr(); err != nil {
		t.Fatalf("load: %v\n%s", err, logs)
	}
	return m, logs
}

// clients returns the REST and gRPC clients of m.
func clients(t testing.TB, m *Main) map[string]oip.Client {
	t.Helper()
	rc, err := rest.NewClient("http://" + m.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	gc, err := oipgrpc.NewClient(m.GRPCAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close(); gc.Close() })
	return map[string]oip.Client{"rest": rc, "grpc": gc}
}

func forecastRequest(b int) (*oip.InferenceRequest, []float32, []int64) {
	h, st := servetest.Input(b)
	return &oip.InferenceRequest{ID: "t", Inputs: []oip.Tensor{
		{Name: oip.InputHistory, Datatype: oip.FP32, Shape: []int64{int64(b), servetest.Lookback}, FP32: h},
		{Name: oip.InputStart, Datatype: oip.INT64, Shape: []int64{int64(b), 1}, INT64: st},
	}}, h, st
}

// trainTree writes a <signal>/<ZONE>/ tree like carbonctl train: DE, FR
// and generic for lifecycle, DE for direct.
func trainTree(t *testing.T) (string, map[string]models.Model) {
	t.Helper()
	root := t.TempDir()
	ms := map[string]models.Model{
		"carbon-forecaster-DE":      servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0),
		"carbon-forecaster-FR":      servetest.Ridge(t, "carbon-forecaster-FR", "FR", 1),
		"carbon-forecaster-generic": servetest.Ridge(t, "carbon-forecaster-generic", "", 2),
	}
	servetest.Save(t, filepath.Join(root, "lifecycle", "DE"), ms["carbon-forecaster-DE"])
	servetest.Save(t, filepath.Join(root, "lifecycle", "FR"), ms["carbon-forecaster-FR"])
	servetest.Save(t, filepath.Join(root, "lifecycle", "generic"), ms["carbon-forecaster-generic"])
	servetest.Save(t, filepath.Join(root, "direct", "DE"), servetest.Ridge(t, "carbon-forecaster-DE", "DE", 3))
	return root, ms
}

// TestServeTreeOverRESTAndGRPC serves a trained tree and drives both ports
// through the real clients: health, metadata, infer B=1 and B=3 equal to
// Predict, errors, metrics.
func TestServeTreeOverRESTAndGRPC(t *testing.T) {
	t.Parallel()
	root, ms := trainTree(t)
	m, _ := startMain(t, noEnv, "--models", root, "--reload-interval", "0")
	ctx := context.Background()
	for proto, c := range clients(t, m) {
		t.Run(proto, func(t *testing.T) {
			if err := c.ServerLive(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.ServerReady(ctx); err != nil {
				t.Fatal(err)
			}
			sm, err := c.ServerMetadata(ctx)
			if err != nil || sm.Name != "carbonserve" {
				t.Fatalf("server metadata=%+v, %v", sm, err)
			}
			for name, model := range ms {
				if err := c.ModelReady(ctx, name, ""); err != nil {
					t.Fatalf("%s ready: %v", name, err)
				}
				md, err := c.ModelMetadata(ctx, name, "")
				if err != nil {
					t.Fatal(err)
				}
				ct, err := oip.ContractOf(md)
				if err != nil || ct != (oip.Contract{Lookback: servetest.Lookback, Horizon: servetest.Horizon}) || md.Platform != "carbongate" {
					t.Fatalf("%s metadata=%+v contract=%+v, %v", name, md, ct, err)
				}
				for _, b := range []int{1, 3} {
					req, h, st := forecastRequest(b)
					resp, err := c.Infer(ctx, name, "", req)
					if err != nil {
						t.Fatalf("%s B=%d: %v", name, b, err)
					}
					out := resp.Output(oip.OutputForecast)
					if want := servetest.Want(t, model, h, st); out == nil || !slices.Equal(out.FP32, want) || !slices.Equal(out.Shape, []int64{int64(b), servetest.Horizon}) {
						t.Fatalf("%s B=%d: got %+v, want %v", name, b, resp.Outputs, want)
					}
					if resp.ModelName != name || resp.ModelVersion != md.Versions[0] {
						t.Fatalf("response names %s@%s, want %s@%s", resp.ModelName, resp.ModelVersion, name, md.Versions[0])
					}
				}
			}
			req, _, _ := forecastRequest(1)
			if _, err := c.Infer(ctx, "carbon-forecaster-XX", "", req); forecast.ErrorCode(err) != forecast.ENOTFOUND {
				t.Fatalf("unknown model: %v", err)
			}
			req.Inputs[0].Shape = []int64{2, servetest.Lookback / 2}
			if _, err := c.Infer(ctx, "carbon-forecaster-DE", "", req); forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("wrong shape: %v", err)
			}
		})
	}
	body := httpGet(t, "http://"+m.HTTPAddr()+"/metrics")
	for _, want := range []string{
		`carbonserve_infer_requests_total{model="carbon-forecaster-DE",status="ok"} 4`,
		`carbonserve_model_ready{model="carbon-forecaster-generic"} 1`,
		`carbonserve_infer_batch_size_bucket{model="carbon-forecaster-FR",le="4"} 4`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKServeConventions: KServe's args (--model_name with the lowercase
// InferenceService name, --model_dir), $PORT for the REST port when no
// --http_port is given, and /mnt/models by default.
func TestKServeConventions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	model := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0)
	servetest.Save(t, dir, model)
	m, _ := startMain(t, noEnv, "--model_name", "carbon-forecaster-de", "--model_dir", dir)
	c := clients(t, m)["grpc"]
	req, h, st := forecastRequest(2)
	resp, err := c.Infer(context.Background(), "carbon-forecaster-de", "", req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.Outputs[0].FP32, servetest.Want(t, model, h, st)) {
		t.Fatal("forecast differs from Predict")
	}

	p := NewMain()
	p.Stderr = io.Discard
	p.Getenv = func(k string) string {
		return map[string]string{"PORT": "9090", "S3_ENDPOINT": "seaweed:8333", "S3_USE_HTTPS": "0", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}[k]
	}
	if err := p.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if p.HTTPPort != 9090 || p.GRPCPort != 8081 || p.S3.Endpoint != "seaweed:8333" || p.S3.Secure || p.S3.AccessKey != "k" {
		t.Fatalf("from env: http %d grpc %d s3 %+v", p.HTTPPort, p.GRPCPort, p.S3)
	}
	if err := p.ParseFlags([]string{"--http_port", "8085"}); err != nil || p.HTTPPort != 8085 {
		t.Fatalf("--http_port over $PORT: %d, %v", p.HTTPPort, err)
	}

	// No flags: /mnt/models when it exists, else a clear error.
	for _, exists := range []bool{true, false} {
		d := NewMain()
		d.Stderr, d.Getenv = io.Discard, noEnv
		d.Stat = func(p string) (os.FileInfo, error) {
			if p == KServeModelDir && exists {
				return os.Stat(dir)
			}
			return nil, os.ErrNotExist
		}
		if err := d.resolveSources(); (err == nil) != exists || (exists && d.ModelDir != KServeModelDir) {
			t.Fatalf("exists=%v: ModelDir=%q, err=%v", exists, d.ModelDir, err)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--signal", "marginal"},
		{"--log-level", "loud"},
		{"extra"},
		{"--http_port", "x"},
	} {
		m := NewMain()
		m.Stderr, m.Getenv = io.Discard, noEnv
		if err := m.ParseFlags(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	m := NewMain()
	m.Stderr, m.Getenv = io.Discard, func(k string) string { return map[string]string{"PORT": "http"}[k] }
	if err := m.ParseFlags(nil); err == nil {
		t.Error("bad $PORT accepted")
	}
	// --model_name without --model_dir, and a dir with two models.
	root, _ := trainTree(t)
	for _, args := range [][]string{{"--models", root, "--model_name", "x"}, {"--model_dir", filepath.Join(root, "lifecycle"), "--model_name", "x"}} {
		m := NewMain()
		m.Stderr, m.Getenv = io.Discard, noEnv
		m.DrainDelay = 0
		if err := m.ParseFlags(append([]string{"--host", "127.0.0.1", "--http_port", "0", "--grpc_port", "0"}, args...)); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		if err == nil {
			err = m.LoadErr()
			if err == nil {
				t.Errorf("%v: no error", args)
			}
			if got := <-m.Done(); got == nil {
				t.Errorf("%v: Done got nil", args)
			}
		}
		m.Close()
	}
}

// TestBindErrorIsSynchronous: a port in use fails Run.
func TestBindErrorIsSynchronous(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "m")
	servetest.Save(t, dir, servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0))
	a, _ := startMain(t, noEnv, "--model_dir", dir)
	b := NewMain()
	b.Stderr, b.Getenv = io.Discard, noEnv
	port := a.HTTPAddr()[strings.LastIndex(a.HTTPAddr(), ":")+1:]
	if err := b.ParseFlags([]string{"--host", "127.0.0.1", "--http_port", port, "--grpc_port", "0", "--model_dir", dir}); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(context.Background()); err == nil {
		b.Close()
		t.Fatal("second server bound the same port")
	}
	b.Close()
}

// TestHotReloadOverGRPC replaces the model directory under a running
// server while clients infer over gRPC: zero failures, then the new model
// answers.
func TestHotReloadOverGRPC(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "DE")
	oldM := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0)
	newM := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 5)
	servetest.Save(t, dir, oldM)
	m, _ := startMain(t, noEnv, "--model_dir", dir, "--reload-interval", "5ms")
	c := clients(t, m)["grpc"]
	req, h, st := forecastRequest(4)
	oldW, newW := servetest.Want(t, oldM, h, st), servetest.Want(t, newM, h, st)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		seen = map[string]int{}
	)
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := c.Infer(context.Background(), "carbon-forecaster-DE", "", req)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case slices.Equal(resp.Outputs[0].FP32, oldW):
					seen["old"]++
				case slices.Equal(resp.Outputs[0].FP32, newW):
					seen["new"]++
				default:
					errs = append(errs, errors.New("answer from neither model"))
				}
				mu.Unlock()
			}
		})
	}
	// Answers of each model while the clients run, however slowly a loaded
	// machine serves the first ones or the first after the reload.
	answered := func(which string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			n, failed := seen[which], len(errs)
			mu.Unlock()
			if n > 0 || failed > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answer of the %s model after 10s", which)
			}
		}
	}
	answered("old")
	servetest.Save(t, dir, newM)
	want, _ := artifact.Version(dir)
	deadline := time.Now().Add(10 * time.Second)
	for {
		md, err := c.ModelMetadata(context.Background(), "carbon-forecaster-DE", "")
		if err == nil && md.Versions[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("new version not served after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	answered("new")
	cancel()
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d failed requests, first: %v", len(errs), errs[0])
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Fatalf("answers %v: want both models", seen)
	}
	t.Logf("answers %v", seen)
}

// TestDrainOnClose: Close fails readiness first, over OIP and the standard
// gRPC health service (a real grpc.health.v1 client: Check and Watch), and
// keeps serving during the drain delay.
func TestDrainOnClose(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "m")
	servetest.Save(t, dir, servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0))
	m := NewMain()
	m.Stderr, m.Getenv = io.Discard, noEnv
	if err := m.ParseFlags([]string{"--host", "127.0.0.1", "--http_port", "0", "--grpc_port", "0", "--model_dir", dir, "--drain-delay", "1s"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.LoadErr(); err != nil {
		t.Fatal(err)
	}
	rc, _ := rest.NewClient("http://" + m.HTTPAddr())
	defer rc.Close()
	ctx := context.Background()
	if err := rc.ServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(m.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	for service, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": healthpb.HealthCheckResponse_SERVING, "carbon-forecaster-DE": healthpb.HealthCheckResponse_SERVING,
	} {
		if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service}); err != nil || r.GetStatus() != want {
			t.Fatalf("grpc.health.v1 Check(%q) = %v, %v; want %v", service, r.GetStatus(), err, want)
		}
	}
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "carbon-forecaster-XX"}); status.Code(err) != codes.NotFound {
		t.Fatalf("grpc.health.v1 Check of an unknown model: %v, want NotFound", err)
	}
	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("grpc.health.v1 Watch: %v, %v; want SERVING", r.GetStatus(), err)
	}
	closed := make(chan error)
	go func() { closed <- m.Close() }()
	// Readiness fails the moment the drain begins: wait for that (not a
	// guessed pause), then check at once what the drain delay must still
	// serve, the watch last (it polls every HealthWatchInterval, half the
	// delay: waiting for it first left too little of the delay on a loaded
	// machine).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		err := rc.ServerReady(ctx)
		if forecast.ErrorCode(err) == forecast.EUNAVAILABLE {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("readiness while draining: %v, want EUNAVAILABLE", err)
		}
	}
	if r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("grpc.health.v1 Check while draining = %v, %v; want NOT_SERVING", r.GetStatus(), err)
	}
	req, _, _ := forecastRequest(1)
	if _, err := rc.Infer(ctx, "carbon-forecaster-DE", "", req); err != nil {
		t.Fatalf("infer while draining: %v", err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("grpc.health.v1 Watch while draining: %v, %v; want NOT_SERVING", r.GetStatus(), err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := rc.ServerLive(ctx); err == nil {
		t.Fatal("live after Close")
	}
	// Close ended the watch before stopping gRPC, or it would have waited
	// the shutdown timeout for it.
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("grpc.health.v1 Watch after Close: %v, want Unavailable, shutting down", err)
	}
}
