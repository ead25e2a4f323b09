package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/gateway/httpedge"
)

// TestHoldDrawsOnTheBodyBudget: what a handler holds beyond FreeBodyBytes
// is taken from the body budget and given back; a request that finds it
// spent is shed (503, Retry-After, reason answers), and holding less than
// the free part never is.
func TestHoldDrawsOnTheBodyBudget(t *testing.T) {
	t.Parallel()
	const budget = 1 << 20
	held := make(chan func(), 1)
	_, ts := newTestServerWith(t, func(c *Config) {
		c.BodyBudget = budget
		c.Mount = func(e *echo.Echo) {
			e.GET("/hold", func(c *echo.Context) error {
				var n int64
				fmt.Sscan(c.QueryParam("n"), &n)
				release, err := httpedge.Hold(c, n)
				if err != nil {
					return err
				}
				if c.QueryParam("keep") != "" {
					held <- release // given back by the test
				} else {
					release()
				}
				return c.String(http.StatusOK, "held")
			})
		}
	})
	get := func(q string) (*http.Response, string) {
		resp, body := do(t, "GET", ts.URL+"/hold?"+q, "", nil)
		return resp, string(body)
	}
	if resp, body := get(fmt.Sprintf("n=%d", FreeBodyBytes+budget+1)); resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "bodies and answers") {
		t.Fatalf("more than the budget: %d %s, want 503 with Retry-After", resp.StatusCode, body)
	}
	if resp, body := get(fmt.Sprintf("n=%d&keep=1", FreeBodyBytes+budget*3/4)); resp.StatusCode != 200 {
		t.Fatalf("3/4 of the budget: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(fmt.Sprintf("n=%d", FreeBodyBytes+budget/2)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("half the budget while 3/4 are held: %d %s, want 503", resp.StatusCode, body)
	}
	if resp, body := get(fmt.Sprintf("n=%d", FreeBodyBytes)); resp.StatusCode != 200 {
		t.Fatalf("the free part while the budget is spent: %d %s", resp.StatusCode, body)
	}
	release := <-held
	release()
	release() // a second call gives nothing back
	if resp, body := get(fmt.Sprintf("n=%d", FreeBodyBytes+budget)); resp.StatusCode != 200 {
		t.Fatalf("the whole budget once given back: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(fmt.Sprintf("n=%d", FreeBodyBytes+1)); resp.StatusCode != 200 {
		t.Fatalf("after the whole budget was given back: %d %s", resp.StatusCode, body)
	}
	_, metrics := do(t, "GET", ts.URL+"/metrics", "", nil)
	if !strings.Contains(string(metrics), `carbongate_http_shed_total{reason="answers"} 2`) {
		t.Fatalf("metrics lack the answers shed count:\n%s", metrics)
	}
}

// TestRouteRender: the errors the server raises for a route with Render
// (a body too large, headers too large) are written by it;
// other routes keep the server's document.
func TestRouteRender(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, func(c *Config) {
		c.Routes = []httpedge.Route{{Prefix: "/sdk/", Render: func(c *echo.Context, status int, e httpedge.ErrorInfo) error {
			return c.JSON(status, map[string]any{"sdk": true, "status": status, "detail": e.Message, "trace": e.RequestID})
		}}}
		c.Mount = func(e *echo.Echo) {
			e.POST("/sdk/x", func(c *echo.Context) error { return c.String(http.StatusOK, "ok") })
		}
	})
	big := strings.Repeat("x", MaxHeaderBytes)
	for _, tt := range []struct {
		name, path string
		body       []byte
		hdr        []string
		status     int
		sdk        bool
	}{
		{"body too large", "/sdk/x", []byte(strings.Repeat(" ", MaxBodyBytes+1)), nil, http.StatusRequestEntityTooLarge, true},
		{"headers too large", "/sdk/x", []byte("{}"), []string{"X-Big", big}, http.StatusRequestHeaderFieldsTooLarge, true},
		{"headers too large elsewhere", "/v1/schedule", []byte("{}"), []string{"X-Big", big}, http.StatusRequestHeaderFieldsTooLarge, false},
		{"served", "/sdk/x", []byte("{}"), nil, http.StatusOK, false},
	} {
		resp, body := do(t, "POST", ts.URL+tt.path, "application/json", tt.body, tt.hdr...)
		if resp.StatusCode != tt.status || strings.Contains(string(body), `"sdk":true`) != tt.sdk {
			t.Errorf("%s: %d %s, want %d (rendered by the route: %v)", tt.name, resp.StatusCode, body, tt.status, tt.sdk)
		}
	}
}
