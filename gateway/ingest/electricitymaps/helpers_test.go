package electricitymaps

import (
	"bytes"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

// api is an httptest server standing in for Electricity Maps: handle
// answers the n-th request (from 0); every request is recorded.
type api struct {
	srv    *httptest.Server
	token  string
	handle func(w http.ResponseWriter, r *http.Request, n int)

	mu   sync.Mutex
	reqs []*url.URL
}

func newAPI(tb testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int)) *api {
	tb.Helper()
	a := &api{token: "tok-" + rand.Text(), handle: handle}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		n := len(a.reqs)
		a.reqs = append(a.reqs, r.URL)
		a.mu.Unlock()
		if r.Header.Get("auth-token") != a.token {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(fixture(tb, "error_invalid_token.json"))
			return
		}
		a.handle(w, r, n)
	}))
	tb.Cleanup(a.srv.Close)
	return a
}

func (a *api) requests() []*url.URL {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*url.URL(nil), a.reqs...)
}

// client returns a Client of a, logging at debug level into logs.
func (a *api) client(tb testing.TB, pastRange bool, logs *bytes.Buffer) *Client {
	tb.Helper()
	if logs == nil {
		logs = &bytes.Buffer{}
	}
	c, err := New(Config{
		Token: a.token, BaseURL: a.srv.URL, HTTPClient: a.srv.Client(), PastRange: pastRange,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// serve answers every request with a recorded file.
func serve(tb testing.TB, name string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixture(tb, name))
	}
}

func fixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Error(err)
	}
	return b
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := forecast.ErrorCode(err); got != code {
		tb.Fatalf("error code=%q, want %q (err: %v)", got, code, err)
	}
}
