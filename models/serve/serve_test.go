package serve_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

const name = "carbon-forecaster-DE"

// newServer serves one tiny ridge model saved in a temp dir.
func newServer(tb testing.TB, cfg serve.Config) (*serve.Server, models.Model, string) {
	tb.Helper()
	m := servetest.Ridge(tb, name, "DE", 0)
	dir := filepath.Join(tb.TempDir(), "DE")
	servetest.Save(tb, dir, m)
	s, err := serve.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	got, err := s.Add(context.Background(), serve.Source{Dir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	if got != name {
		tb.Fatalf("served name=%q, want %q", got, name)
	}
	return s, m, dir
}

func request(b int) *oip.InferenceRequest {
	h, st := servetest.Input(b)
	return &oip.InferenceRequest{ID: "req-1", Inputs: []oip.Tensor{
		{Name: "history", Datatype: oip.FP32, Shape: []int64{int64(b), servetest.Lookback}, FP32: h},
		{Name: "start_unix", Datatype: oip.INT64, Shape: []int64{int64(b), 1}, INT64: st},
	}}
}

func TestMetadataAndHealth(t *testing.T) {
	t.Parallel()
	s, _, dir := newServer(t, serve.Config{ServerVersion: "1.2.3"})
	ctx := context.Background()
	version, err := artifact.Version(dir)
	if err != nil {
		t.Fatal(err)
	}
	md, err := s.ModelMetadata(ctx, name, "")
	if err != nil {
		t.Fatal(err)
	}
	want := oip.ModelMetadata{
		Name: name, Versions: []string{version}, Platform: "carbongate",
		Inputs: []oip.TensorMetadata{
			{Name: "history", Datatype: oip.FP32, Shape: []int64{-1, servetest.Lookback}},
			{Name: "start_unix", Datatype: oip.INT64, Shape: []int64{-1, 1}},
		},
		Outputs: []oip.TensorMetadata{{Name: "forecast", Datatype: oip.FP32, Shape: []int64{-1, servetest.Horizon}}},
	}
	if !equalMetadata(md, want) {
		t.Fatalf("metadata=%+v, want %+v", md, want)
	}
	if len(version) != artifact.VersionLen {
		t.Fatalf("version %q has %d digits, want %d", version, len(version), artifact.VersionLen)
	}
	if _, err := s.ModelMetadata(ctx, name, version); err != nil {
		t.Fatalf("metadata at the served version: %v", err)
	}
	sm, _ := s.ServerMetadata(ctx)
	if sm.Name != "carbonserve" || sm.Version != "1.2.3" {
		t.Fatalf("server metadata=%+v", sm)
	}
	for _, tc := range []struct {
		note  string
		call  func() (bool, error)
		want  bool
		wantE string
	}{
		{"live", func() (bool, error) { return s.ServerLive(ctx) }, true, ""},
		{"ready", func() (bool, error) { return s.ServerReady(ctx) }, true, ""},
		{"model ready", func() (bool, error) { return s.ModelReady(ctx, name, "") }, true, ""},
		{"model ready at version", func() (bool, error) { return s.ModelReady(ctx, name, version) }, true, ""},
		{"unknown model", func() (bool, error) { return s.ModelReady(ctx, "nope", "") }, false, forecast.ENOTFOUND},
		{"unknown version", func() (bool, error) { return s.ModelReady(ctx, name, "v9") }, false, forecast.ENOTFOUND},
	} {
		got, err := tc.call()
		if got != tc.want || forecast.ErrorCode(err) != tc.wantE {
			t.Errorf("%s: (%v, %v), want (%v, code %q)", tc.note, got, err, tc.want, tc.wantE)
		}
	}
	s.Drain()
	if ok, _ := s.ServerReady(ctx); ok {
		t.Fatal("ready after Drain")
	}
	if ok, _ := s.ModelReady(ctx, name, ""); !ok {
		t.Fatal("model not ready after Drain: draining must keep serving")
	}
}

func equalMetadata(a, b oip.ModelMetadata) bool {
	eq := func(x, y []oip.TensorMetadata) bool {
		return slices.EqualFunc(x, y, func(p, q oip.TensorMetadata) bool {
			return p.Name == q.Name && p.Datatype == q.Datatype && slices.Equal(p.Shape, q.Shape)
		})
	}
	return a.Name == b.Name && a.Platform == b.Platform && slices.Equal(a.Versions, b.Versions) && eq(a.Inputs, b.Inputs) && eq(a.Outputs, b.Outputs)
}

func TestInferEqualsPredict(t *testing.T) {
	t.Parallel()
	s, m, dir := newServer(t, serve.Config{})
	version, _ := artifact.Version(dir)
	for _, b := range []int{1, 3, 64} {
		req := request(b)
		resp, err := s.Infer(context.Background(), name, "", req)
		if err != nil {
			t.Fatalf("B=%d: %v", b, err)
		}
		if resp.ID != "req-1" || resp.ModelName != name || resp.ModelVersion != version {
			t.Fatalf("B=%d: response id/name/version = %q/%q/%q", b, resp.ID, resp.ModelName, resp.ModelVersion)
		}
		out := resp.Output("forecast")
		if out == nil || out.Datatype != oip.FP32 || !slices.Equal(out.Shape, []int64{int64(b), servetest.Horizon}) {
			t.Fatalf("B=%d: output %+v", b, resp.Outputs)
		}
		want := servetest.Want(t, m, req.Inputs[0].FP32, req.Inputs[1].INT64)
		if !slices.Equal(out.FP32, want) {
			t.Fatalf("B=%d: forecast differs from model.Predict:\n got %v\nwant %v", b, out.FP32, want)
		}
	}
}

func TestInferErrors(t *testing.T) {
	t.Parallel()
	s, _, _ := newServer(t, serve.Config{MaxBatch: 4})
	mod := func(f func(r *oip.InferenceRequest)) *oip.InferenceRequest {
		r := request(2)
		f(r)
		return r
	}
	for _, tc := range []struct {
		note    string
		model   string
		version string
		req     *oip.InferenceRequest
		code    string
	}{
		{note: "unknown model", model: "carbon-forecaster-XX", req: request(1), code: forecast.ENOTFOUND},
		{note: "unknown version", model: name, version: "0123456789ab", req: request(1), code: forecast.ENOTFOUND},
		{note: "nil request", model: name, code: forecast.EINVALID},
		{note: "no inputs", model: name, req: &oip.InferenceRequest{}, code: forecast.EINVALID},
		{note: "missing start", model: name, req: mod(func(r *oip.InferenceRequest) { r.Inputs = r.Inputs[:1] }), code: forecast.EINVALID},
		{note: "extra input", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs = append(r.Inputs, oip.Tensor{Name: "x", Datatype: oip.FP32, Shape: []int64{1}, FP32: []float32{1}})
		}), code: forecast.EINVALID},
		{note: "wrong lookback", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs[0].Shape = []int64{4, servetest.Lookback / 2}
		}), code: forecast.EINVALID},
		{note: "history FP64", model: name, req: mod(func(r *oip.InferenceRequest) {
			h := r.Inputs[0]
			r.Inputs[0] = oip.Tensor{Name: h.Name, Datatype: oip.FP64, Shape: h.Shape, FP64: make([]float64, len(h.FP32))}
		}), code: forecast.EINVALID},
		{note: "history rank 1", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs[0].Shape = []int64{2 * servetest.Lookback}
		}), code: forecast.EINVALID},
		{note: "data shorter than shape", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs[0].FP32 = r.Inputs[0].FP32[1:]
		}), code: forecast.EINVALID},
		{note: "rows disagree", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs[1].Shape, r.Inputs[1].INT64 = []int64{1, 1}, r.Inputs[1].INT64[:1]
		}), code: forecast.EINVALID},
		{note: "start [B] not [B,1]", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs[1].Shape = []int64{2}
		}), code: forecast.EINVALID},
		{note: "start not on the hour", model: name, req: mod(func(r *oip.InferenceRequest) { r.Inputs[1].INT64[1] += 60 }), code: forecast.EINVALID},
		{note: "non-finite history", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Inputs[0].FP32[5] = float32(nan())
		}), code: forecast.EINVALID},
		{note: "empty batch", model: name, req: &oip.InferenceRequest{Inputs: []oip.Tensor{
			{Name: "history", Datatype: oip.FP32, Shape: []int64{0, servetest.Lookback}},
			{Name: "start_unix", Datatype: oip.INT64, Shape: []int64{0, 1}},
		}}, code: forecast.EINVALID},
		{note: "batch above max", model: name, req: request(5), code: forecast.EINVALID},
		{note: "unknown output", model: name, req: mod(func(r *oip.InferenceRequest) {
			r.Outputs = []oip.RequestedOutput{{Name: "lower"}}
		}), code: forecast.EINVALID},
	} {
		t.Run(tc.note, func(t *testing.T) {
			_, err := s.Infer(context.Background(), tc.model, tc.version, tc.req)
			if got := forecast.ErrorCode(err); got != tc.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tc.code)
			}
		})
	}
	// A requested "forecast" output is fine.
	r := request(1)
	r.Outputs = []oip.RequestedOutput{{Name: "forecast"}}
	if _, err := s.Infer(context.Background(), name, "", r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Infer(ctx, name, "", request(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func nan() float64 { var z float64; return z / z }

// TestNotReady: a model whose directory does not load (yet) is known and
// not ready: EUNAVAILABLE on Infer and metadata, (false, nil) on ModelReady;
// Reload picks it up once the directory is there.
func TestNotReady(t *testing.T) {
	t.Parallel()
	s, err := serve.New(serve.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, _ := s.ServerReady(ctx); ok {
		t.Fatal("ready with no models")
	}
	dir := filepath.Join(t.TempDir(), "late")
	if _, err := s.Add(ctx, serve.Source{Name: name, Dir: dir}); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("Add of a missing dir: %v", err)
	}
	if ok, err := s.ModelReady(ctx, name, ""); ok || err != nil {
		t.Fatalf("ModelReady=(%v, %v), want (false, nil)", ok, err)
	}
	if ok, _ := s.ServerReady(ctx); ok {
		t.Fatal("server ready with a model not loaded")
	}
	if _, err := s.Infer(ctx, name, "", request(1)); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("Infer: %v, want EUNAVAILABLE", err)
	}
	if _, err := s.ModelMetadata(ctx, name, ""); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("ModelMetadata: %v, want EUNAVAILABLE", err)
	}
	if st := s.Models(); len(st) != 1 || st[0].Ready || st[0].Error == "" {
		t.Fatalf("status=%+v", st)
	}
	servetest.Save(t, dir, servetest.Ridge(t, name, "DE", 1))
	res, err := s.Reload(ctx)
	if err != nil || len(res) != 1 || !res[0].Changed {
		t.Fatalf("Reload=%+v, %v", res, err)
	}
	if _, err := s.Infer(ctx, name, "", request(1)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.ServerReady(ctx); !ok {
		t.Fatal("server not ready after the model loaded")
	}
	if _, err := s.Add(ctx, serve.Source{Name: name, Dir: dir}); forecast.ErrorCode(err) != forecast.ECONFLICT {
		t.Fatalf("second Add of a name: %v, want ECONFLICT", err)
	}
}

// TestHotReloadUnderLoad replaces the model directory with a different
// model while goroutines infer without pause: no request fails, every answer
// is exactly the old or the new model's, and once Reload returns every
// answer is the new model's.
func TestHotReloadUnderLoad(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, oldM, dir := newServer(t, serve.Config{Metrics: reg})
	newM := servetest.Ridge(t, name, "DE", 2)
	req := request(3)
	oldWant := servetest.Want(t, oldM, req.Inputs[0].FP32, req.Inputs[1].INT64)
	newWant := servetest.Want(t, newM, req.Inputs[0].FP32, req.Inputs[1].INT64)
	if slices.Equal(oldWant, newWant) {
		t.Fatal("test models forecast alike")
	}
	oldV, _ := artifact.Version(dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg                     sync.WaitGroup
		fails, oldN, newN, bad atomic.Int64
		swapped                atomic.Bool
		staleAfter             atomic.Int64
		versions               sync.Map // version → "old" | "new"
	)
	versions.Store(oldV, "old")
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				after := swapped.Load()
				resp, err := s.Infer(context.Background(), name, "", req)
				if err != nil {
					fails.Add(1)
					t.Errorf("infer during reload: %v", err)
					return
				}
				which := "mixed"
				switch got := resp.Outputs[0].FP32; {
				case slices.Equal(got, oldWant):
					which = "old"
					oldN.Add(1)
					if after {
						staleAfter.Add(1)
					}
				case slices.Equal(got, newWant):
					which = "new"
					newN.Add(1)
				default:
					bad.Add(1)
				}
				// A version always answers with the same model.
				if prev, _ := versions.LoadOrStore(resp.ModelVersion, which); prev != which {
					bad.Add(1)
				}
			}
		})
	}
	// The watcher polls while the directory is replaced under it.
	wctx, wstop := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	wwg.Go(func() { s.Watch(wctx, time.Millisecond, nil) })
	// Old answers before the first replacement and new ones after Reload,
	// however slowly a loaded machine runs the clients.
	answered := func(which string, n *atomic.Int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); n.Load() == 0 && fails.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no answer of the %s model after 10s", which)
			}
		}
	}
	answered("old", &oldN)
	for i := range 5 { // replace it a few times: old, new, old, new, ... new
		m := newM
		if i%2 == 1 {
			m = oldM
		}
		servetest.Save(t, dir, m)
		time.Sleep(10 * time.Millisecond)
	}
	wstop()
	wwg.Wait()
	if _, err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	swapped.Store(true)
	answered("new", &newN)
	cancel()
	wg.Wait()
	if fails.Load() != 0 || bad.Load() != 0 {
		t.Fatalf("%d failed and %d mixed answers", fails.Load(), bad.Load())
	}
	if staleAfter.Load() != 0 {
		t.Fatalf("%d answers from the old model after Reload returned", staleAfter.Load())
	}
	if oldN.Load() == 0 || newN.Load() == 0 {
		t.Fatalf("answers old=%d new=%d: want both", oldN.Load(), newN.Load())
	}
	t.Logf("answers: old=%d new=%d", oldN.Load(), newN.Load())
	if got := testutil.ToFloat64(mustVec(t, reg, "carbonserve_infer_requests_total", name, "ok")); got != float64(oldN.Load()+newN.Load()) {
		t.Fatalf("ok requests metric=%v, want %d", got, oldN.Load()+newN.Load())
	}
}

// mustVec finds the counter carbonserve_infer_requests_total{model,status}.
func mustVec(t *testing.T, reg *prometheus.Registry, metric, model, status string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["model"] == model && labels["status"] == status {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return m.GetCounter().GetValue() })
			}
		}
	}
	t.Fatalf("no %s{model=%q,status=%q}", metric, model, status)
	return nil
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, _, _ := newServer(t, serve.Config{Metrics: reg})
	ctx := context.Background()
	s.Infer(ctx, name, "", request(3))
	s.Infer(ctx, name, "", &oip.InferenceRequest{})
	s.Infer(ctx, "who", "", request(1))
	want := `
# HELP carbonserve_infer_requests_total Infer calls by model and status (ok or the error code).
# TYPE carbonserve_infer_requests_total counter
carbonserve_infer_requests_total{model="_unknown",status="not_found"} 1
carbonserve_infer_requests_total{model="carbon-forecaster-DE",status="invalid"} 1
carbonserve_infer_requests_total{model="carbon-forecaster-DE",status="ok"} 1
# HELP carbonserve_model_ready 1 when the model has a loaded version, 0 while it loads or failed to.
# TYPE carbonserve_model_ready gauge
carbonserve_model_ready{model="carbon-forecaster-DE"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "carbonserve_infer_requests_total", "carbonserve_model_ready"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "carbonserve_infer_batch_size", "carbonserve_infer_duration_seconds", "carbonserve_model_info"); n != 3 {
		t.Fatalf("histogram/info series=%d, want 3", n)
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	de := servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0)
	gen := servetest.Ridge(t, "carbon-forecaster-generic", "", 1)
	for _, p := range []string{"lifecycle/DE", "direct/DE"} {
		servetest.Save(t, filepath.Join(root, "signal", p), de)
	}
	servetest.Save(t, filepath.Join(root, "signal", "lifecycle", "generic"), gen)
	servetest.Save(t, filepath.Join(root, "flat", "a"), de)
	servetest.Save(t, filepath.Join(root, "flat", "b"), gen)
	servetest.Save(t, filepath.Join(root, "one"), de)
	rel := func(src []serve.Source) []string {
		var out []string
		for _, s := range src {
			r, _ := filepath.Rel(root, s.Dir)
			out = append(out, filepath.ToSlash(r))
		}
		return out
	}
	for _, tc := range []struct {
		note   string
		dir    string
		signal forecast.Signal
		want   []string
		code   string
	}{
		{note: "signal layout, lifecycle", dir: "signal", signal: forecast.SignalLifecycle, want: []string{"signal/lifecycle/DE", "signal/lifecycle/generic"}},
		{note: "signal layout, direct", dir: "signal", signal: forecast.SignalDirect, want: []string{"signal/direct/DE"}},
		{note: "flat", dir: "flat", want: []string{"flat/a", "flat/b"}},
		{note: "one model dir", dir: "one", want: []string{"one"}},
		{note: "missing", dir: "nope", code: forecast.ENOTFOUND},
	} {
		t.Run(tc.note, func(t *testing.T) {
			src, err := serve.Discover(filepath.Join(root, tc.dir), tc.signal)
			if forecast.ErrorCode(err) != tc.code {
				t.Fatalf("err=%v, want code %q", err, tc.code)
			}
			if got := rel(src); !slices.Equal(got, tc.want) {
				t.Fatalf("dirs=%v, want %v", got, tc.want)
			}
		})
	}
	// Serving a whole signal layout: every model under its registered name.
	src, _ := serve.Discover(filepath.Join(root, "signal"), forecast.SignalLifecycle)
	s, _ := serve.New(serve.Config{})
	for _, x := range src {
		if _, err := s.Add(context.Background(), x); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, st := range s.Models() {
		names = append(names, st.Name)
	}
	if want := []string{"carbon-forecaster-DE", "carbon-forecaster-generic"}; !slices.Equal(names, want) {
		t.Fatalf("models=%v, want %v", names, want)
	}
}

// TestVersionIsMLmodelHash pins the documented version rule.
func TestVersionIsMLmodelHash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	servetest.Save(t, dir, servetest.Ridge(t, name, "DE", 0))
	v1, err := artifact.Version(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, artifact.MLmodelFile))
	if err := os.WriteFile(filepath.Join(dir, artifact.MLmodelFile), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if v2, _ := artifact.Version(dir); v2 == v1 {
		t.Fatal("version did not change with the MLmodel file")
	}
	if _, err := artifact.Version(t.TempDir()); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("no MLmodel: %v", err)
	}
}
