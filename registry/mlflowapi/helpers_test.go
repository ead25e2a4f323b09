package mlflowapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/registry/mlflowapi"
	"github.com/carbongate/carbongate/test/testsupport"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const testToken = "s3cr3t-token"

// env is one API over a fresh embedded store.
type env struct {
	t     testing.TB
	api   *mlflowapi.API
	store registry.Store
	e     *echo.Echo
	logs  *testsupport.SyncBuffer
}

// tick is a clock that advances one second per reading, from a fixed
// start, so that responses are reproducible.
func tick() func() time.Time {
	var mu sync.Mutex
	now := time.UnixMilli(1_700_000_000_000)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

// newEnv opens an embedded store in a temporary directory; wrap, when not
// nil, wraps it (to inject failures); cfg's Store and Logger are filled.
func newEnv(tb testing.TB, cfg mlflowapi.Config, wrap func(registry.Store) registry.Store) *env {
	tb.Helper()
	s, err := embedded.Open(filepath.Join(tb.TempDir(), "registry.json"), registry.Options{Now: tick()})
	if err != nil {
		tb.Fatalf("embedded.Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	var store registry.Store = s
	if wrap != nil {
		store = wrap(s)
	}
	logs := &testsupport.SyncBuffer{}
	cfg.Store = store
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	api, err := mlflowapi.New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	e := echo.New()
	e.HTTPErrorHandler = api.HTTPErrorHandler
	api.Register(e)
	return &env{t: tb, api: api, store: store, e: e, logs: logs}
}

// response is a recorded response.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic value.
func (r response) json(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		tb.Fatalf("response %d is not a JSON object: %v: %s", r.status, err, r.body)
	}
	return m
}

// errorCode returns the error_code of an error response.
func (r response) errorCode(tb testing.TB) string {
	tb.Helper()
	code, _ := r.json(tb)["error_code"].(string)
	return code
}

// do sends a request; a body is sent as JSON with the test token.
func (e *env) do(method, path, body string, header ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if method == http.MethodPost || method == http.MethodPatch || body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.e.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// must sends a request and fails unless it answers 200.
func (e *env) must(method, path, body string) response {
	e.t.Helper()
	r := e.do(method, path, body)
	if r.status != http.StatusOK {
		e.t.Fatalf("%s %s %s: %d %s", method, path, body, r.status, r.body)
	}
	return r
}

// golden compares body with testdata/golden/name.json (after indenting),
// or rewrites it with -update.
func golden(tb testing.TB, name string, body []byte) {
	tb.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		tb.Fatalf("%s: response is not JSON: %v: %s", name, err, body)
	}
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%s: %v (run with -update to create it)", name, err)
	}
	if got := buf.String(); got != string(want) {
		tb.Fatalf("%s: response differs from %s:\n got: %s\nwant: %s", name, path, got, want)
	}
}
