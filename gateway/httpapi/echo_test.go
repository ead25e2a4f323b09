package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/test/testsupport"
)

// TestEchoErrors: the errors Echo itself produces (no route, wrong method)
// and those mounted routes return as Echo errors are rendered as the API's
// error document with their status, code and message, as under Echo v4,
// whose errors were all *echo.HTTPError.
func TestEchoErrors(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, func(c *Config) {
		c.Mount = func(e *echo.Echo) {
			e.GET("/x/message", func(*echo.Context) error {
				return echo.NewHTTPError(http.StatusUnsupportedMediaType, "Content-Type must be text/x")
			})
			e.GET("/x/sentinel", func(*echo.Context) error {
				return fmt.Errorf("upstream: %w", echo.ErrServiceUnavailable)
			})
		}
	})
	tests := []struct {
		method, path  string
		status        int
		code, message string
		allow         string
	}{
		{"GET", "/x/message", 415, "unsupported_media_type", "Content-Type must be text/x", ""},
		{"GET", "/x/sentinel", 503, "unavailable", "Service Unavailable", ""},
		{"GET", "/v2/schedule", 404, "not_found", "Not Found", ""},
		{"GET", "/v1/zones/", 404, "not_found", "Not Found", ""}, // no trailing-slash redirect
		{"GET", "/v1/schedule", 405, "method_not_allowed", "Method Not Allowed", "OPTIONS, POST"},
		{"DELETE", "/healthz", 405, "method_not_allowed", "Method Not Allowed", "OPTIONS, GET"},
	}
	for _, tt := range tests {
		resp, body := do(t, tt.method, ts.URL+tt.path, "", nil)
		var e api.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != tt.status {
			t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.status)
		}
		if e.Error.Code != tt.code || e.Error.Message != tt.message || e.RequestID != resp.Header.Get(httpedge.HeaderRequestID) {
			t.Errorf("%s %s: %s, want code %q, message %q and the request id", tt.method, tt.path, body, tt.code, tt.message)
		}
		if got := resp.Header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, got, tt.allow)
		}
	}
	resp, _ := do(t, "OPTIONS", ts.URL+"/v1/schedule", "", nil)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Allow") != "OPTIONS, POST" {
		t.Fatalf("OPTIONS /v1/schedule: %d, Allow %q, want 204 and OPTIONS, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestAccessLog: each request is logged once with its route (unmatched
// when there is none), status and the bytes of its body; a HEAD request
// counts the bytes its GET would send, though none are sent.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	var logs testsupport.SyncBuffer
	_, ts := newTestServerWith(t, func(c *Config) {
		c.AccessLog = true
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	_, get := do(t, "GET", ts.URL+"/v1/zones", "", nil, httpedge.HeaderRequestID, "get1") // as long as "head": the body holds it
	if len(get) == 0 {
		t.Fatal("GET /v1/zones: empty body")
	}
	do(t, "HEAD", ts.URL+"/v1/zones", "", nil, httpedge.HeaderRequestID, "head")
	_, notFound := do(t, "GET", ts.URL+"/nowhere", "", nil, httpedge.HeaderRequestID, "none")
	_, wrong := do(t, "GET", ts.URL+"/v1/schedule", "", nil, httpedge.HeaderRequestID, "wrong")
	// A request is logged after its answer went out, and the next one may
	// come on another connection: wait for the four lines.
	waitFor(t, func() bool {
		l := logs.String()
		for _, id := range []string{"get1", "head", "none", "wrong"} {
			if !strings.Contains(l, `"request_id":"`+id+`"`) {
				return false
			}
		}
		return true
	})
	type entry struct {
		Msg, Route string
		Status     int
		Bytes      int
	}
	got := map[string]entry{}
	for line := range strings.Lines(logs.String()) {
		var l struct {
			entry
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if _, dup := got[l.RequestID]; dup {
			t.Fatalf("request %s logged twice:\n%s", l.RequestID, logs.String())
		}
		got[l.RequestID] = l.entry
	}
	want := map[string]entry{
		"get1":  {"request", "/v1/zones", 200, len(get)},
		"head":  {"request", "/v1/zones", 200, len(get)},
		"none":  {"request", "unmatched", 404, len(notFound)},
		"wrong": {"request", "unmatched", 405, len(wrong)},
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("request %s logged as %+v, want %+v", id, got[id], w)
		}
	}
}
