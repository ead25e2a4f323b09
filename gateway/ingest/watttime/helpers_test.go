package watttime

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// api is an httptest server standing in for WattTime: /login hands out a
// new token per login to the right basic-auth credentials; other paths
// need a valid bearer token and are answered by handle (n counts them
// from 0).
type api struct {
	srv            *httptest.Server
	user, password string
	handle         func(w http.ResponseWriter, r *http.Request, n int)

	mu     sync.Mutex
	valid  map[string]bool
	issued []string
	reqs   []*url.URL // data requests
}

func newAPI(tb testing.TB, handle func(w http.ResponseWriter, r *http.Request, n int)) *api {
	tb.Helper()
	a := &api{user: "carbongate-test", password: "pw-" + rand.Text(), handle: handle, valid: map[string]bool{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve(tb)))
	tb.Cleanup(a.srv.Close)
	return a
}

func (a *api) serve(tb testing.TB) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			user, pw, ok := r.BasicAuth()
			if !ok || user != a.user || pw != a.password {
				http.Error(w, `{"error":"invalid credentials"}`, http.StatusUnauthorized)
				return
			}
			var login map[string]string
			if err := json.Unmarshal(fixture(tb, "login.json"), &login); err != nil {
				tb.Error(err)
			}
			a.mu.Lock()
			tok := login["token"] + "." + rand.Text()
			a.valid[tok] = true
			a.issued = append(a.issued, tok)
			a.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]string{"token": tok})
			return
		}
		a.mu.Lock()
		ok := a.valid[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		n := len(a.reqs)
		a.reqs = append(a.reqs, r.URL)
		a.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":"invalid token"}`, http.StatusUnauthorized)
			return
		}
		a.handle(w, r, n)
	}
}

// expireTokens makes the server refuse every token issued so far.
func (a *api) expireTokens() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.valid)
}

func (a *api) logins() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.issued...)
}

func (a *api) requests() []*url.URL {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*url.URL(nil), a.reqs...)
}

// client returns a Client of a on clock, logging at debug level into logs.
func (a *api) client(tb testing.TB, clock ingest.Clock, logs *bytes.Buffer) *Client {
	tb.Helper()
	if logs == nil {
		logs = &bytes.Buffer{}
	}
	c, err := New(Config{
		Username: a.user, Password: a.password, BaseURL: a.srv.URL, HTTPClient: a.srv.Client(),
		Regions: map[forecast.Zone]string{"US-CAL-CISO": "CAISO_NORTH"},
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:     clock.Now,
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

// t10 is the first point of the recorded historical answers.
var t10 = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
