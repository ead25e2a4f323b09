package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/test/testsupport"
)

// slowBodies opens n connections that each send the headers of a POST to
// path with Content-Length: length and then sent bytes of the body, and
// keep the connections open (sending nothing more) until the test ends.
func slowBodies(t *testing.T, addr, path string, n, length, sent int) {
	t.Helper()
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, length)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, head+strings.Repeat(" ", sent)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlowBodiesHoldNoSlot is the reproduction of the slow-body attack:
// clients that send headers and then their body slowly used to hold the
// in-flight slots while they sent, and everyone else got 503. Now the
// body is read before a slot is taken: with 4 slots and 40 slow bodies,
// requests are answered and the server is ready.
func TestSlowBodiesHoldNoSlot(t *testing.T) {
	t.Parallel()
	var arrived atomic.Int32 // requests whose headers the server has read
	_, ts := newTestServerWith(t, func(c *Config) {
		c.MaxInFlight = 4
		c.Mount = func(e *echo.Echo) {
			e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c *echo.Context) error { arrived.Add(1); return next(c) }
			})
		}
	})
	addr := strings.TrimPrefix(ts.URL, "http://")
	slowBodies(t, addr, "/v1/schedule", 40, 60000, 1)
	// Every slow request is in the middleware chain before the others come:
	// were its body read after it took a slot, the slots would be held.
	waitFor(t, func() bool { return arrived.Load() == 40 })
	for i := range 10 {
		if resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone)); resp.StatusCode != 200 {
			t.Fatalf("request %d while 40 bodies arrive slowly: %d %s", i, resp.StatusCode, body)
		}
	}
	if resp, body := do(t, "GET", ts.URL+"/readyz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("readyz while 40 bodies arrive slowly: %d %s", resp.StatusCode, body)
	}
}

// rawRequest sends req on a new connection, half-closes it and returns
// the answer as text ("" if none came).
func rawRequest(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	return string(b)
}

// TestShortBodyAnswered: a body that ends before its Content-Length gets a
// 400 naming the body (it used to get no answer at all), and the access
// log records what was sent.
func TestShortBodyAnswered(t *testing.T) {
	t.Parallel()
	var logs testsupport.SyncBuffer
	_, ts := newTestServerWith(t, func(c *Config) {
		c.Logger, c.AccessLog = slog.New(slog.NewJSONHandler(&logs, nil)), true
	})
	answer := rawRequest(t, strings.TrimPrefix(ts.URL, "http://"),
		"POST /v1/schedule HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"+oneZone)
	if !strings.HasPrefix(answer, "HTTP/1.1 400 ") || !strings.Contains(answer, `"field":"body"`) ||
		!strings.Contains(answer, fmt.Sprintf("ended after %d of 100 bytes", len(oneZone))) {
		t.Fatalf("short body answered %q, want 400 naming the body", answer)
	}
	waitFor(t, func() bool { return strings.Contains(logs.String(), `"status":400`) })
}

// TestBodyTimeoutAnswered: a body still arriving at the read timeout is
// answered 408 even though the write timeout has passed by then.
func TestBodyTimeoutAnswered(t *testing.T) {
	t.Parallel()
	apiSrv, _ := newTestServerWith(t, nil)
	srv := apiSrv.HTTPServer()
	srv.ReadTimeout, srv.WriteTimeout = 400*time.Millisecond, 200*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST /v1/schedule HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a body that timed out: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "1 of 100 bytes") {
		t.Fatalf("timed-out body: %d %s, want 408 saying how much arrived", resp.StatusCode, b)
	}
}

// TestBodyBudget: bytes beyond FreeBodyBytes draw on the body budget;
// stalled large bodies that spend it get the next large body shed (503,
// reason bodies) or answered by the route's Shed, while small bodies are
// still served (so readiness does not fail for it).
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	var shedBody []byte
	var shedComplete bool
	var mu sync.Mutex
	apiSrv, ts := newTestServerWith(t, func(c *Config) {
		c.BodyBudget = 1 << 20
		c.Routes = []httpedge.Route{
			{Prefix: "/big", MaxBody: 4 << 20},
			{Prefix: "/big/shed", MaxBody: 4 << 20, Shed: func(c *echo.Context, reason error) error {
				mu.Lock()
				defer mu.Unlock()
				shedBody, shedComplete = httpedge.Body(c)
				shedBody = bytes.Clone(shedBody)
				return c.String(http.StatusOK, "shed: "+forecast.ErrorMessage(reason))
			}},
		}
		c.Mount = func(e *echo.Echo) {
			for _, p := range []string{"/big", "/big/shed"} {
				e.POST(p, func(c *echo.Context) error {
					b, complete := httpedge.Body(c)
					return c.String(http.StatusOK, fmt.Sprint(len(b), complete))
				})
			}
		}
	})
	addr := strings.TrimPrefix(ts.URL, "http://")
	// Served whole while the budget lasts.
	if resp, body := do(t, "POST", ts.URL+"/big", "application/json", bytes.Repeat([]byte(" "), 1<<20)); resp.StatusCode != 200 || string(body) != "1048576 true" {
		t.Fatalf("1 MiB body: %d %s", resp.StatusCode, body)
	}
	// Two clients send 300 KiB of a 1 MiB body each and stall: they hold
	// 2 × 448 KiB of the budget (each read buffer doubled to 512 KiB, the
	// first 64 KiB free), too much for another 1 MiB body. Wait until the
	// server has read that far into both.
	slowBodies(t, addr, "/big", 2, 1<<20, 300<<10)
	waitFor(t, func() bool { return apiSrv.budget.Left() == 1<<20-2*(512-64)<<10 })
	resp, body := do(t, "POST", ts.URL+"/big", "application/json", bytes.Repeat([]byte(" "), 1<<20))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "bytes of request bodies") {
		t.Fatalf("large body over the budget: %d %s, want 503 with Retry-After", resp.StatusCode, body)
	}
	resp, body = do(t, "POST", ts.URL+"/big/shed", "application/json", bytes.Repeat([]byte("x"), 1<<20))
	mu.Lock()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "shed: overloaded") || shedComplete || len(shedBody) < FreeBodyBytes {
		t.Fatalf("route Shed over the budget: %d %s, got %d bytes complete=%v", resp.StatusCode, body, len(shedBody), shedComplete)
	}
	mu.Unlock()
	if resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone)); resp.StatusCode != 200 {
		t.Fatalf("small request with the budget spent: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", ts.URL+"/readyz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("readyz with the body budget spent: %d %s", resp.StatusCode, body)
	}
	_, metrics := do(t, "GET", ts.URL+"/metrics", "", nil)
	if !strings.Contains(string(metrics), `carbongate_http_shed_total{reason="bodies"} 2`) {
		t.Fatalf("metrics lack the bodies shed count:\n%s", metrics)
	}
}

// TestShedRouteAnswer: a route with Shed answers its own way when the
// in-flight limit sheds it, with the whole body at hand; shed requests are
// not logged as errors.
func TestShedRouteAnswer(t *testing.T) {
	t.Parallel()
	svc := &blockingService{entered: make(chan struct{}, 1), release: make(chan struct{})}
	var logs testsupport.SyncBuffer
	apiSrv, err := New(Config{Service: svc, Metrics: prometheus.NewRegistry(), MaxInFlight: 1, RequestTimeout: time.Minute,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Routes: []httpedge.Route{{Prefix: "/hooked", Shed: func(c *echo.Context, reason error) error {
			b, complete := httpedge.Body(c)
			return c.String(http.StatusOK, fmt.Sprintf("%s %v %s", b, complete, forecast.ErrorMessage(reason)))
		}}},
		Mount: func(e *echo.Echo) { e.POST("/hooked", func(c *echo.Context) error { return c.String(200, "served") }) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(apiSrv)
	t.Cleanup(ts.Close)
	var wg sync.WaitGroup
	wg.Go(func() {
		if resp, err := http.Post(ts.URL+"/v1/schedule", "application/json", strings.NewReader(oneZone)); err == nil {
			resp.Body.Close()
		}
	})
	<-svc.entered
	defer wg.Wait()
	defer close(svc.release)
	resp, body := do(t, "POST", ts.URL+"/hooked", "application/json", []byte(`{"a":1}`))
	if resp.StatusCode != 200 || string(body) != `{"a":1} true overloaded: 1 requests in flight; retry after 1 s` {
		t.Fatalf("shed route answered %d %q", resp.StatusCode, body)
	}
	if resp, _ := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(oneZone)); resp.StatusCode != 503 {
		t.Fatalf("plain route while saturated: %d, want 503", resp.StatusCode)
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("shed requests were logged as errors:\n%s", logs.String())
	}
}

// TestHeadAndQueryErrors: HEAD is served on GET routes (it used to be
// 405), and a malformed query string is named as such (it used to say
// the zone was missing).
func TestHeadAndQueryErrors(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for _, p := range []string{"/healthz", "/v1/zones", "/openapi.json"} {
		resp, body := do(t, "HEAD", ts.URL+p, "", nil)
		if resp.StatusCode != 200 || len(body) != 0 {
			t.Fatalf("HEAD %s: %d with %d bytes, want 200 without a body", p, resp.StatusCode, len(body))
		}
	}
	resp, body := do(t, "GET", ts.URL+"/v1/forecast?zone=%zz", "", nil)
	var e api.ErrorBody
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 400 || e.Error.Field != "query" {
		t.Fatalf("GET /v1/forecast?zone=%%zz: %d %s, want 400 naming the query", resp.StatusCode, body)
	}
	long := strings.Repeat("Z", 10000)
	resp, body = do(t, "GET", ts.URL+"/v1/forecast?zone="+long, "", nil)
	if resp.StatusCode != 400 || len(body) > 1000 {
		t.Fatalf("a 10,000-character zone: %d, %d bytes of answer, want 400 with the id clipped", resp.StatusCode, len(body))
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}
