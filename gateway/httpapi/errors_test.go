package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/test/testsupport"
)

// TestNotReadyIsNotAnError: /readyz answering 503 (warming up) is the
// probe's answer, not a failed request: it is not logged at ERROR (a
// readiness probe during start-up made the Schemathesis suite's "no error
// logged" check fail now and then).
func TestNotReadyIsNotAnError(t *testing.T) {
	t.Parallel()
	logs := &testsupport.SyncBuffer{}
	_, ts := newTestServerWith(t, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		c.Ready = func() error { return forecast.Errorf(forecast.EUNAVAILABLE, "warming the forecast cache") }
	})
	if resp, body := do(t, "GET", ts.URL+"/readyz", "", nil); resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), "warming the forecast cache") {
		t.Fatalf("readyz while warming: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("a not-ready answer was logged as an error:\n%s", logs)
	}
}
