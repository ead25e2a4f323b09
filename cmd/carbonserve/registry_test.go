package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/test/testsupport"
)

// startRegistryMain is startMain with setup applied to Main before Run
// (e.g. to give it a registry.Store).
func startRegistryMain(t *testing.T, env func(string) string, setup func(*Main), args ...string) (*Main, *testsupport.SyncBuffer) {
	t.Helper()
	m := NewMain()
	logs := &testsupport.SyncBuffer{}
	m.Stderr, m.Getenv = logs, env
	m.DrainDelay = 0
	// The tests' model directories are temporary directories.
	if err := m.ParseFlags(append([]string{"--host", "127.0.0.1", "--http_port", "0", "--grpc_port", "0", "--artifact-sources", os.TempDir()}, args...)); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(m)
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
	case <-time.After(60 * time.Second):
		t.Fatal("model not loaded after 60s")
	}
	if err := m.LoadErr(); err != nil {
		t.Fatalf("load: %v\n%s", err, logs)
	}
	return m, logs
}

// served is one model version a test registers: its model and the
// outputs it gives for the test's request.
type served struct {
	version string
	want    []float32
}

// switchover infers with c in a loop while promote runs, and checks that
// model_version and outputs switch from "from" to "to" within limit of
// promote returning, with no failed request and every answer one of the
// two versions, label and outputs agreeing.
func switchover(t *testing.T, c oip.Client, model string, from, to served, limit time.Duration, promote func()) {
	t.Helper()
	req, _, _ := forecastRequest(2)
	ctx := context.Background()
	var (
		stop     atomic.Bool
		switched atomic.Int64 // unix nanos of the first answer from "to"
		n        atomic.Int64
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	fail := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, s)
		}
	}
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				resp, err := c.Infer(ctx, model, "", req)
				n.Add(1)
				switch {
				case err != nil:
					fail(err.Error())
				case resp.ModelVersion == from.version && slices.Equal(resp.Outputs[0].FP32, from.want):
				case resp.ModelVersion == to.version && slices.Equal(resp.Outputs[0].FP32, to.want):
					switched.CompareAndSwap(0, time.Now().UnixNano())
				default:
					fail("answer of version " + resp.ModelVersion + " matches neither version's outputs")
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // requests in flight before the promotion
	promote()
	t0 := time.Now()
	for switched.Load() == 0 && time.Since(t0) < limit {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and after it
	stop.Store(true)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests, failures during the switch: %q", n.Load(), failures)
	}
	at := switched.Load()
	if at == 0 {
		t.Fatalf("version %s not served %v after the promotion", to.version, limit)
	}
	t.Logf("switched to version %s %v after the promotion; %d requests, none failed", to.version, time.Unix(0, at).Sub(t0).Round(time.Millisecond), n.Load())
}

// saveModel writes m to a new directory and returns it.
func saveModel(t *testing.T, m models.Model) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "model")
	servetest.Save(t, dir, m)
	return dir
}

func openEmbedded(t *testing.T) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "registry.json"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRegistryFollowsAlias serves models:/NAME@champion from an embedded
// store (local artifact directories): version 1 first, then each alias
// move is swapped in without a failed request; a version that does not
// load, and a deleted alias, leave the served version in place.
func TestRegistryFollowsAlias(t *testing.T) {
	t.Parallel()
	const name = "carbon-forecaster-DE"
	ctx := context.Background()
	st := openEmbedded(t)
	m1, m2 := servetest.Ridge(t, name, "DE", 0), servetest.Ridge(t, name, "DE", 5)
	if _, err := st.CreateModel(ctx, name, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []models.Model{m1, m2} {
		if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: saveModel(t, m)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetAlias(ctx, name, "champion", 1); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	m, logs := startRegistryMain(t, noEnv, func(m *Main) { m.Registry.Store = st },
		"--model", "models:/"+name+"@champion", "--cache-dir", cache, "--registry-poll", "50ms")
	_, h, starts := forecastRequest(2)
	v1 := served{"1", servetest.Want(t, m1, h, starts)}
	v2 := served{"2", servetest.Want(t, m2, h, starts)}

	for proto, c := range clients(t, m) {
		md, err := c.ModelMetadata(ctx, name, "")
		if err != nil || !slices.Equal(md.Versions, []string{"1"}) {
			t.Fatalf("%s: metadata %+v, %v; want versions [1]", proto, md, err)
		}
		if err := c.ModelReady(ctx, name, "1"); err != nil {
			t.Fatalf("%s: ready(version 1): %v", proto, err)
		}
		if err := c.ModelReady(ctx, name, "2"); forecast.ErrorCode(err) != forecast.ENOTFOUND {
			t.Fatalf("%s: ready(version 2) = %v, want ENOTFOUND", proto, err)
		}
	}
	c := clients(t, m)["grpc"]
	switchover(t, c, name, v1, v2, 5*time.Second, func() {
		if err := st.SetAlias(ctx, name, "champion", 2); err != nil {
			t.Fatal(err)
		}
	})
	req, _, _ := forecastRequest(2)
	if resp, err := c.Infer(ctx, name, "2", req); err != nil || resp.ModelVersion != "2" {
		t.Fatalf("infer version 2 = %+v, %v", resp, err)
	}
	if _, err := c.Infer(ctx, name, "1", req); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("infer version 1 after the switch = %v, want ENOTFOUND", err)
	}

	// A version without a model, then a deleted alias: version 2 stays.
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "README"), []byte("no model"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: empty}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetAlias(ctx, name, "champion", 3); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "new model version not served")
	if _, err := os.Stat(filepath.Join(cache, "registry", "m-"+name, "v3")); !os.IsNotExist(err) {
		t.Fatalf("the copy of version 3, which did not load, stays: %v", err)
	}
	if err := st.DeleteAlias(ctx, name, "champion"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, "the followed alias is gone")
	if resp, err := c.Infer(ctx, name, "", req); err != nil || resp.ModelVersion != "2" || !slices.Equal(resp.Outputs[0].FP32, v2.want) {
		t.Fatalf("after a broken version and a deleted alias: %+v, %v; want version 2", resp, err)
	}
}

// TestRegistryLatest follows models:/NAME/latest by polling.
func TestRegistryLatest(t *testing.T) {
	t.Parallel()
	const name = "carbon-forecaster-FR"
	ctx := context.Background()
	st := openEmbedded(t)
	m1, m2 := servetest.Ridge(t, name, "FR", 1), servetest.Ridge(t, name, "FR", 2)
	if _, err := st.CreateModel(ctx, name, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: saveModel(t, m1)}); err != nil {
		t.Fatal(err)
	}
	m, _ := startRegistryMain(t, noEnv, func(m *Main) { m.Registry.Store = st },
		"--model", "models:/"+name+"/latest", "--model_name", "fr", "--registry-poll", "50ms")
	_, h, starts := forecastRequest(2)
	dir := saveModel(t, m2)
	switchover(t, clients(t, m)["rest"], "fr", served{"1", servetest.Want(t, m1, h, starts)}, served{"2", servetest.Want(t, m2, h, starts)}, 5*time.Second, func() {
		if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: dir}); err != nil {
			t.Fatal(err)
		}
	})
}

// flaky is a store whose GetVersion is EUNAVAILABLE while fails > 0.
type flaky struct {
	registry.Store
	fails atomic.Int32
}

func (f *flaky) GetVersion(ctx context.Context, name string, v int64) (registry.ModelVersion, error) {
	if f.fails.Add(-1) >= 0 {
		return registry.ModelVersion{}, forecast.Errorf(forecast.EUNAVAILABLE, "registry down")
	}
	return f.Store.GetVersion(ctx, name, v)
}

// TestRegistryRetriesTransientFailures: a promotion that fails because
// the registry is unavailable is retried at the next poll, although the
// alias does not move again.
func TestRegistryRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	const name = "carbon-forecaster-PL"
	ctx := context.Background()
	st := &flaky{Store: openEmbedded(t)}
	m1, m2 := servetest.Ridge(t, name, "PL", 1), servetest.Ridge(t, name, "PL", 3)
	if _, err := st.CreateModel(ctx, name, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []models.Model{m1, m2} {
		if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: saveModel(t, m)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetAlias(ctx, name, "champion", 1); err != nil {
		t.Fatal(err)
	}
	m, logs := startRegistryMain(t, noEnv, func(m *Main) { m.Registry.Store = st },
		"--model", "models:/"+name+"@champion", "--registry-poll", "50ms")
	_, h, starts := forecastRequest(2)
	switchover(t, clients(t, m)["grpc"], name, served{"1", servetest.Want(t, m1, h, starts)}, served{"2", servetest.Want(t, m2, h, starts)}, 5*time.Second, func() {
		st.fails.Store(2)
		if err := st.SetAlias(ctx, name, "champion", 2); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(logs.String(), `"retry":true`) {
		t.Fatalf("no failed promotion logged:\n%s", logs)
	}
}

// TestRegistryRetriesAtStart: a registry unavailable when carbonserve
// starts is retried (with backoff) until it answers.
func TestRegistryRetriesAtStart(t *testing.T) {
	t.Parallel()
	const name = "carbon-forecaster-PL"
	ctx := context.Background()
	st := &flaky{Store: openEmbedded(t)}
	if _, err := st.CreateModel(ctx, name, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: saveModel(t, servetest.Ridge(t, name, "PL", 1))}); err != nil {
		t.Fatal(err)
	}
	st.fails.Store(2)
	_, logs := startRegistryMain(t, noEnv, func(m *Main) { m.Registry.Store = st }, "--model", "models:/"+name+"/1")
	if got := strings.Count(logs.String(), "registry unavailable; retrying"); got != 2 {
		t.Fatalf("%d retries logged, want 2:\n%s", got, logs)
	}
}

func waitLog(t *testing.T, logs *testsupport.SyncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no log %q after 5s:\n%s", want, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRegistryFlags(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		return map[string]string{"MLFLOW_TRACKING_URI": "http://mlflow:5000", "MLFLOW_TRACKING_TOKEN": "tok", "MLFLOW_S3_ENDPOINT_URL": "http://s3:8333"}[k]
	}
	m := NewMain()
	m.Getenv, m.Stderr = env, &testsupport.SyncBuffer{}
	if err := m.ParseFlags([]string{"--model", "models:/m@champion"}); err != nil {
		t.Fatal(err)
	}
	if err := m.resolveSources(); err != nil {
		t.Fatal(err)
	}
	r := m.Registry
	if r.URI != "http://mlflow:5000" || r.Token != "tok" || r.PollInterval != DefaultRegistryPoll || m.S3.Endpoint != "http://s3:8333" {
		t.Fatalf("defaults from the environment: %+v, S3 endpoint %q", r, m.S3.Endpoint)
	}
	if m.reg == nil || m.reg.Name() != "m" || m.reg.Ref().Alias != "champion" {
		t.Fatalf("registry mode not set up: %+v", m.reg)
	}

	cases := []struct {
		note string
		env  func(string) string
		args []string
		want string
	}{
		{"with --model_dir", env, []string{"--model", "models:/m@a", "--model_dir", "/x"}, "excludes"},
		{"with --models", env, []string{"--model", "models:/m@a", "--models", "/x"}, "excludes"},
		{"not a models URI", env, []string{"--model", "s3://b/m"}, "--model"},
		{"model ID", env, []string{"--model", "models:/m-123abc"}, "--model"},
		{"no registry", noEnv, []string{"--model", "models:/m@a"}, "--registry"},
		{"registry not http", env, []string{"--model", "models:/m@a", "--registry", "databricks"}, "--registry: "},
		{"registry not http, old name", env, []string{"--model", "models:/m@a", "--registry-uri", "databricks"}, "--registry: "},
		{"poll interval", env, []string{"--model", "models:/m@a", "--registry-poll", "0s"}, "--registry-poll"},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			m := NewMain()
			m.Getenv, m.Stderr = tc.env, &testsupport.SyncBuffer{}
			if err := m.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			err := m.resolveSources()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("resolveSources = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// TestRegistryUntrustedSource: a version whose source lies outside
// --artifact-sources and --artifacts-destination is not fetched.
func TestRegistryUntrustedSource(t *testing.T) {
	t.Parallel()
	const name = "carbon-forecaster-ES"
	ctx := context.Background()
	st := openEmbedded(t)
	if _, err := st.CreateModel(ctx, name, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateVersion(ctx, registry.NewVersion{Name: name, Source: "/etc"}); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	m.Stderr, m.Getenv, m.DrainDelay = &testsupport.SyncBuffer{}, noEnv, 0
	cache := t.TempDir()
	if err := m.ParseFlags([]string{"--host", "127.0.0.1", "--http_port", "0", "--grpc_port", "0",
		"--model", "models:/" + name + "/1", "--cache-dir", cache}); err != nil {
		t.Fatal(err)
	}
	m.Registry.Store = st
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.LoadErr(); err == nil || !strings.Contains(err.Error(), "outside the allowed artifact sources") {
		t.Fatalf("load: %v, want the source refused", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "registry", "m-"+name)); len(ents) > 0 {
		t.Fatalf("copied into the cache: %v", ents)
	}
}
