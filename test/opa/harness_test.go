//go:build interop

// Package opa runs carbongate's OPA admission bundle (deploy/opa) in a real
// OPA server, against a real carbongate process, and checks every shared
// admission fixture (test/fixtures/admission) through OPA's REST API.
package opa

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// replayStart is carbongate's replay clock at start; the fixtures' deadlines
// are relative to it.
const replayStart = "2021-06-01T00:00:00Z"

// callTimeout is the policy's bound on /v1/schedule (CARBONGATE_TIMEOUT), and
// slowDelay how long the slow backend holds a request: beyond it.
const (
	callTimeout = 2 * time.Second
	slowDelay   = callTimeout + 2*time.Second
)

// startCarbongate starts the gateway on the replay clock.
func startCarbongate(tb testing.TB) (*services.Proc, string) {
	tb.Helper()
	bin := services.GoBuild(tb, "carbongate")
	var url string
	p := services.StartBinary(tb, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"),
		ArgsFor: func() []string {
			port := services.FreePort(tb)
			url = fmt.Sprintf("http://127.0.0.1:%d", port)
			return []string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--clock", "replay",
				"--replay-start", replayStart, "--drain-delay", "0s", "--access-log=false"}
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(url + "/readyz")(ctx) },
	})
	return p, url
}

// opaConfig is what a test OPA server is started with.
type opaConfig struct {
	carbongate   string // CARBONGATE_URL
	failOpen     bool
	cacheSeconds int
}

// startOPA runs OPA with the bundle and c's settings (services.StartOPA)
// and returns its process and URL.
func startOPA(tb testing.TB, opa, bundle string, c opaConfig) (*services.Proc, string) {
	tb.Helper()
	o := services.StartOPA(tb, opa, services.OPAConfig{Bundle: bundle, Carbongate: c.carbongate, Timeout: callTimeout,
		FailOpen: c.failOpen, CacheSeconds: c.cacheSeconds})
	return o.Proc, o.URL
}

// exchange is one /v1/schedule call seen by a backend.
type exchange struct {
	status int
	body   []byte
}

// backend is a fake or proxy in front of carbongate that records the
// /v1/schedule calls it gets, by canonical request body.
type backend struct {
	srv   *httptest.Server
	mu    sync.Mutex
	last  map[string]exchange // canonical request body → latest answer
	calls map[string]int
}

// newBackend serves answer (the upstream's exchange for a request body).
func newBackend(tb testing.TB, answer func(r *http.Request, body []byte) (exchange, bool)) *backend {
	tb.Helper()
	b := &backend{last: map[string]exchange{}, calls: map[string]int{}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/schedule" {
			http.Error(w, "backend: want POST /v1/schedule", http.StatusBadRequest)
			return
		}
		key := canonical(body)
		b.mu.Lock()
		b.calls[key]++
		b.mu.Unlock()
		x, ok := answer(r, body)
		if !ok {
			return // the client gave up
		}
		b.mu.Lock()
		b.last[key] = x
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(x.status)
		_, _ = w.Write(x.body)
	}))
	tb.Cleanup(b.srv.Close)
	return b
}

// seen returns the latest answer to request body req and how many calls
// carried it.
func (b *backend) seen(req []byte) (exchange, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := canonical(req)
	return b.last[key], b.calls[key]
}

// canonical re-encodes a JSON document with sorted keys; invalid JSON is
// kept as is.
func canonical(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	c, _ := json.Marshal(v)
	return string(c)
}

// forward posts body to carbongate's /v1/schedule with the caller's Prefer
// header (the policy asks for the minimal answer).
func forward(ctx context.Context, carbongate, prefer string, body []byte) (exchange, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, carbongate+"/v1/schedule", bytes.NewReader(body))
	if err != nil {
		return exchange{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return exchange{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return exchange{status: resp.StatusCode, body: b}, err
}

// proxy records what carbongate answers.
func proxy(tb testing.TB, carbongate string) *backend {
	return newBackend(tb, func(r *http.Request, body []byte) (exchange, bool) {
		x, err := forward(r.Context(), carbongate, r.Header.Get("Prefer"), body)
		if err != nil {
			return exchange{status: http.StatusBadGateway, body: []byte(`{"error":{"code":"unavailable","message":"proxy: ` + err.Error() + `"}}`)}, true
		}
		return x, true
	})
}

// slow holds each request for slowDelay (or until the client gives up)
// before passing it to carbongate.
func slow(tb testing.TB, carbongate string) *backend {
	return newBackend(tb, func(r *http.Request, body []byte) (exchange, bool) {
		select {
		case <-time.After(slowDelay):
		case <-r.Context().Done():
			return exchange{}, false
		}
		x, err := forward(r.Context(), carbongate, r.Header.Get("Prefer"), body)
		return x, err == nil
	})
}

// failing answers 500 as carbongate does for an internal error.
func failing(tb testing.TB) *backend {
	return newBackend(tb, func(*http.Request, []byte) (exchange, bool) {
		return exchange{status: http.StatusInternalServerError,
			body: []byte(`{"error":{"code":"internal","message":"internal error"},"request_id":"FAKE500"}`)}, true
	})
}
