package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/carbongate/carbongate/gateway/api"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/gateway/httpedge"
)

// bodyLimits is, per route of the API, the largest body it reads: 0 for
// routes that read none (a body sent to them is never buffered). A route
// added without an entry fails TestEveryRouteHasABodyLimit.
var bodyLimits = map[string]int{
	"POST /v1/schedule":      MaxBodyBytes,
	"GET /v1/forecast":       0,
	"GET /v1/zones":          0,
	"GET /v1/instance-types": 0,
	"GET /healthz":           0,
	"GET /readyz":            0,
	"GET /metrics":           0,
	"GET /openapi.json":      0,
}

func TestEveryRouteHasABodyLimit(t *testing.T) {
	t.Parallel()
	apiSrv, _ := newTestServer(t)
	for _, r := range apiSrv.Routes() {
		if _, ok := bodyLimits[r]; !ok {
			t.Errorf("route %s has no entry in bodyLimits: give it a body limit and a test", r)
		}
	}
}

// chunked hides a body's length, so only the reader's limit can stop it.
type chunked struct{ io.Reader }

func TestBodyLimitPerRoute(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	// A valid request padded with spaces to exactly n bytes.
	padded := func(n int) []byte {
		b := []byte(acceptance)
		return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
	}
	tests := []struct {
		name, route string
		body        []byte
		hideLength  bool
		status      int
	}{
		{"schedule at the limit", "POST /v1/schedule", padded(MaxBodyBytes), false, 200},
		{"schedule over the limit, declared", "POST /v1/schedule", padded(MaxBodyBytes + 1), false, 413},
		{"schedule over the limit, chunked", "POST /v1/schedule", padded(MaxBodyBytes + 1), true, 413},
		{"schedule far over the limit, chunked", "POST /v1/schedule", padded(8 << 20), true, 413},
		{"forecast ignores a body", "GET /v1/forecast", padded(1 << 20), true, 200},
		{"zones ignores a body", "GET /v1/zones", padded(1 << 20), false, 200},
		{"instance types ignore a body", "GET /v1/instance-types", padded(1 << 20), true, 200},
		{"healthz ignores a body", "GET /healthz", padded(1 << 20), true, 200},
		{"readyz ignores a body", "GET /readyz", padded(1 << 20), false, 200},
		{"metrics ignores a body", "GET /metrics", padded(1 << 20), true, 200},
		{"openapi ignores a body", "GET /openapi.json", padded(1 << 20), false, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			method, path, _ := strings.Cut(tt.route, " ")
			switch path {
			case "/v1/forecast":
				path += "?zone=DE"
			case "/v1/instance-types":
				path += "?provider=aws&min_cpu=2&min_ram=8"
			}
			var body io.Reader = bytes.NewReader(tt.body)
			if tt.hideLength {
				body = chunked{body}
			}
			req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				// The server may answer 413 and close before the whole
				// body is sent; the client then reports the broken pipe.
				if msg := err.Error(); tt.status == 413 && (errors.Is(err, net.ErrClosed) ||
					strings.Contains(msg, "broken pipe") || strings.Contains(msg, "connection reset")) {
					return
				}
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, b)
			}
			if tt.status == 413 {
				var e api.ErrorBody
				if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != "too_large" ||
					!strings.Contains(e.Error.Message, fmt.Sprint(MaxBodyBytes)) {
					t.Fatalf("413 body %s: want code too_large and the limit in the message", b)
				}
			}
		})
	}
}

// TestHeaderLimits: the server built by HTTPServer refuses headers over
// MaxHeaderBytes with 431, and a request id over 128 characters is replaced
// rather than echoed.
func TestHeaderLimits(t *testing.T) {
	t.Parallel()
	apiSrv, _ := newTestServer(t)
	srv := apiSrv.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	send := func(t *testing.T, header string) *http.Response {
		t.Helper()
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /v1/zones HTTP/1.1\r\nHost: x\r\n%s\r\nConnection: close\r\n\r\n", header)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	tests := []struct {
		name   string
		header string
		status int
	}{
		{"small", "X-Note: hello", 200},
		{"half the limit", "X-Note: " + strings.Repeat("a", MaxHeaderBytes/2), 200},
		{"just over the limit", "X-Note: " + strings.Repeat("a", MaxHeaderBytes), 431},
		{"over net/http's limit", "X-Note: " + strings.Repeat("a", srv.MaxHeaderBytes+8<<10), 431},
		{"many headers over the limit", strings.Repeat("X-Note: "+strings.Repeat("a", 1000)+"\r\n", MaxHeaderBytes/1000+8) + "X-End: 1", 431},
		{"long request id", "X-Request-Id: " + strings.Repeat("r", 129), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := send(t, tt.header)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if id := resp.Header.Get(httpedge.HeaderRequestID); tt.status == 200 && (id == "" || len(id) > 128) {
				t.Fatalf("X-Request-Id %q: want a generated id", id)
			}
		})
	}
	if MaxHeaderBytes != 64<<10 || srv.MaxHeaderBytes != 2*MaxHeaderBytes || srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 {
		t.Fatalf("server limits: %d bytes of headers, %v header timeout, %v read timeout", srv.MaxHeaderBytes, srv.ReadHeaderTimeout, srv.ReadTimeout)
	}
}
