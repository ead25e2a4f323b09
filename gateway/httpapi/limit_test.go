package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// blockingService is a Service whose Schedule blocks until release is
// closed (or the request's context ends), after signalling entered. A
// request for zone PANIC panics instead.
type blockingService struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingService) Schedule(ctx context.Context, req gateway.Request) (gateway.Decision, error) {
	if len(req.Zones) > 0 && req.Zones[0] == "PANIC" {
		panic("boom")
	}
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return gateway.Decision{}, ctx.Err()
	}
	start := testNow.Add(time.Hour)
	return gateway.Decision{Decision: gateway.Placement{Zone: "DE", Start: start, End: start.Add(req.Duration), Mean: 100},
		Signal: forecast.SignalLifecycle, Clock: b.Now()}, nil
}

func (b *blockingService) Forecast(context.Context, forecast.Zone, forecast.Signal) (forecast.Forecast, gateway.Reading, error) {
	return forecast.Forecast{}, b.Now(), forecast.Errorf(forecast.EUNAVAILABLE, "no forecasts here")
}

func (b *blockingService) Zones() []gateway.ZoneInfo { return nil }

func (b *blockingService) Now() gateway.Reading { return gateway.Reading{Mode: "replay", Now: testNow} }

const oneZone = `{"zones":["DE"],"duration":"1h"}`

// TestInFlightLimitSheds: with N requests blocked in the service, request
// N+1 gets 503 unavailable with Retry-After at once; probes and metrics
// still answer; once the N finish, requests are admitted again.
func TestInFlightLimitSheds(t *testing.T) {
	t.Parallel()
	const n = 3
	svc := &blockingService{entered: make(chan struct{}, n), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	apiSrv, err := New(Config{Service: svc, Metrics: reg, MaxInFlight: n, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(apiSrv)
	t.Cleanup(ts.Close)

	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			resp, _ := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone))
			codes[i] = resp.StatusCode
		})
	}
	for range n {
		select {
		case <-svc.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the first requests did not reach the service")
		}
	}

	t0 := time.Now()
	resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone))
	if el := time.Since(t0); el > time.Second {
		t.Errorf("shedding took %v, want at once", el)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("request %d: status %d Retry-After %q, want 503 and 1; body %s", n+1, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	var e api.ErrorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != forecast.EUNAVAILABLE || !strings.Contains(e.Error.Message, "overloaded") ||
		e.RequestID == "" || e.RequestID != resp.Header.Get(httpedge.HeaderRequestID) {
		t.Fatalf("shed body %s (%v)", body, err)
	}
	// Other API routes are limited too; probes and metrics are not.
	if resp, _ := do(t, "GET", ts.URL+"/v1/zones", "", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET /v1/zones while saturated: %d, want 503", resp.StatusCode)
	}
	for _, p := range []string{"/healthz", "/metrics"} {
		if resp, body := do(t, "GET", ts.URL+p, "", nil); resp.StatusCode != 200 {
			t.Fatalf("GET %s while saturated: %d %s", p, resp.StatusCode, body)
		}
	}
	// Readiness answers too, and says the server is saturated, so that a
	// load balancer sends new work elsewhere.
	if resp, body := do(t, "GET", ts.URL+"/readyz", "", nil); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), "saturated: all 3 request slots in use") {
		t.Fatalf("GET /readyz while saturated: %d %s, want 503 saying saturated", resp.StatusCode, body)
	}
	_, metrics := do(t, "GET", ts.URL+"/metrics", "", nil)
	for _, want := range []string{
		`carbongate_http_shed_total{reason="inflight"} 2`,
		"carbongate_http_inflight_requests 3",
		`carbongate_http_requests_total{code="503",route="/v1/schedule"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("metrics lack %q:\n%s", want, metrics)
		}
	}

	close(svc.release)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("blocked request %d: status %d, want 200", i, c)
		}
	}
	// The slots are free again, also after a panicking handler.
	if resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(`{"zones":["PANIC"],"duration":"1h"}`)); resp.StatusCode != 500 {
		t.Fatalf("panicking handler: %d %s", resp.StatusCode, body)
	}
	for i := range n + 1 {
		if resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone)); resp.StatusCode != 200 {
			t.Fatalf("after release, request %d: %d %s", i, resp.StatusCode, body)
		}
		<-svc.entered
	}
	_, metrics = do(t, "GET", ts.URL+"/metrics", "", nil)
	if !strings.Contains(string(metrics), "carbongate_http_inflight_requests 0") {
		t.Fatalf("in-flight gauge not back to 0:\n%s", metrics)
	}
}

// TestBacklogSheds: while as many goroutines as MaxBacklog wait for a CPU,
// API requests are shed (probes are not); once the backlog drains they are
// admitted again. The scheduler reading is faked.
func TestBacklogSheds(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	close(release)
	svc := &blockingService{entered: make(chan struct{}, 16), release: release}
	var backlog atomic.Int64
	newAPI := func(maxBacklog int) *httptest.Server {
		apiSrv, err := New(Config{Service: svc, Metrics: prometheus.NewRegistry(), MaxInFlight: 10, MaxBacklog: maxBacklog})
		if err != nil {
			t.Fatal(err)
		}
		apiSrv.limiter.read = func() int64 { return backlog.Load() }
		ts := httptest.NewServer(apiSrv)
		t.Cleanup(ts.Close)
		return ts
	}
	ts := newAPI(50)
	backlog.Store(50)
	resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone))
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "waiting for a CPU") {
		t.Fatalf("backlog at the limit: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, _ := do(t, "GET", ts.URL+"/healthz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("healthz under backlog: %d", resp.StatusCode)
	}
	_, metrics := do(t, "GET", ts.URL+"/metrics", "", nil)
	if want := `carbongate_http_shed_total{reason="backlog"} 1`; !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %s:\n%s", want, metrics)
	}
	backlog.Store(49)
	time.Sleep(2 * backlogEvery) // the reading is cached for backlogEvery
	if resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone)); resp.StatusCode != 200 {
		t.Fatalf("backlog under the limit: %d %s", resp.StatusCode, body)
	}
	// Off: the backlog is not even read.
	off := newAPI(-1)
	backlog.Store(1 << 20)
	if resp, body := do(t, "POST", off.URL+"/v1/schedule", "application/json", []byte(oneZone)); resp.StatusCode != 200 {
		t.Fatalf("backlog check off: %d %s", resp.StatusCode, body)
	}
}

func TestMaxInFlightConfig(t *testing.T) {
	t.Parallel()
	if got, want := DefaultMaxInFlight(), InFlightPerCPU*runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("DefaultMaxInFlight()=%d, want %d", got, want)
	}
	svc := &blockingService{}
	apiSrv, err := New(Config{Service: svc, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if got := cap(apiSrv.limiter.slots); got != DefaultMaxInFlight() {
		t.Fatalf("default limit %d, want %d", got, DefaultMaxInFlight())
	}
	if _, err := New(Config{Service: svc, Metrics: prometheus.NewRegistry(), MaxInFlight: -1}); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("MaxInFlight -1: %v, want EINVALID", err)
	}
}

// BenchmarkShed measures the cost of rejecting a request at the limit.
func BenchmarkShed(b *testing.B) {
	svc := &blockingService{entered: make(chan struct{}, 1), release: make(chan struct{})}
	apiSrv, err := New(Config{Service: svc, Metrics: prometheus.NewRegistry(), MaxInFlight: 1, RequestTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		apiSrv.ServeHTTP(httptest.NewRecorder(), newPost(oneZone))
	}()
	<-svc.entered
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		apiSrv.ServeHTTP(w, newPost(oneZone))
		if w.Code != http.StatusServiceUnavailable {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.StopTimer()
	close(svc.release)
	<-done
}

func newPost(body string) *http.Request {
	r := httptest.NewRequest("POST", "/v1/schedule", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}
