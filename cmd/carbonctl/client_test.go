package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/wiring"
)

// serveGateway serves carbongate's HTTP API over the embedded gateway
// (bundled data, no trained models, the replay clock) on loopback.
func serveGateway(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	// NewBundled: the bundled data and a replay clock from 2021-06-01.
	g, err := wiring.NewBundled(context.Background(), wiring.Config{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	api, err := httpapi.New(httpapi.Config{Service: g.Service, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestScheduleCommand(t *testing.T) {
	t.Parallel()
	url := serveGateway(t)
	args := []string{"schedule", "--url", url, "--zones", "DE,SE,PL", "--locations", "aws:eu-west-1", "--duration", "3h", "--deadline", "2021-06-03T00:00:00Z"}

	code, out, errs := runCtl(t, append(args, "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Decision struct {
			Zone  string
			Start time.Time
		}
		SavingsPct float64 `json:"savings_pct"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Decision.Zone == "" {
		t.Fatalf("--output json is not carbongate's answer: %v\n%s", err, out)
	}

	code, out, errs = runCtl(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[1]), "decision") || !strings.Contains(lines[1], d.Decision.Zone) ||
		!strings.Contains(lines[1], d.Decision.Start.Format(time.RFC3339)) || !strings.Contains(lines[2], "run now") {
		t.Errorf("table does not show the decision %s at %v then the baseline:\n%s", d.Decision.Zone, d.Decision.Start, out)
	}
	if want := fmt.Sprintf("saving over running now: %.1f%%", d.SavingsPct); !strings.Contains(out, want) {
		t.Errorf("table lacks %q:\n%s", want, out)
	}

	// The gate: below the saving, defer (3); above it, run now (0).
	if d.SavingsPct <= 0 {
		t.Fatalf("no saving (%v) to gate on", d.SavingsPct)
	}
	if code, _, errs := runCtl(t, append(args, "--run-now-below", fmt.Sprint(d.SavingsPct/2))...); code != exitDefer || !strings.Contains(errs, "defer") {
		t.Errorf("--run-now-below %v: exit %d (%s), want %d", d.SavingsPct/2, code, errs, exitDefer)
	}
	if code, _, errs := runCtl(t, append(args, "--run-now-below", fmt.Sprint(d.SavingsPct+1))...); code != 0 {
		t.Errorf("--run-now-below %v: exit %d (%s), want 0", d.SavingsPct+1, code, errs)
	}
}

func TestForecastCommand(t *testing.T) {
	t.Parallel()
	url := serveGateway(t)
	code, out, errs := runCtl(t, "forecast", "--url", url, "--zone", "DE", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var f struct {
		Start  time.Time
		Values []float64
	}
	if err := json.Unmarshal([]byte(out), &f); err != nil || len(f.Values) == 0 {
		t.Fatalf("--output json: %v\n%s", err, out)
	}
	code, out, errs = runCtl(t, "forecast", "--url", url, "--zone", "DE")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(f.Values)+2 {
		t.Fatalf("%d lines for %d hours:\n%s", len(lines), len(f.Values), out)
	}
	last := lines[len(lines)-1]
	if want := fmt.Sprintf("%s  %.1f", f.Start.Add(time.Duration(len(f.Values)-1)*time.Hour).Format(time.RFC3339), f.Values[len(f.Values)-1]); last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}

func TestClientCommandErrors(t *testing.T) {
	t.Parallel()
	url := serveGateway(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, tt := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no duration", []string{"schedule", "--url", url, "--zones", "DE"}, 2, "--duration is required"},
		{"no candidates", []string{"schedule", "--url", url, "--duration", "3h"}, 2, "--zones, --locations"},
		{"bad location", []string{"schedule", "--url", url, "--duration", "3h", "--locations", "eu-west-1"}, 2, "provider:region"},
		{"bad output", []string{"forecast", "--url", url, "--zone", "DE", "--output", "yaml"}, 2, "--output"},
		{"bad url", []string{"forecast", "--url", "localhost", "--zone", "DE"}, 2, "--url"},
		{"unknown zone: carbongate's 400", []string{"schedule", "--url", url, "--zones", "XX", "--duration", "3h"}, 1, "carbongate answered 400 for zones: unknown zone(s): XX"},
		{"carbongate down", []string{"forecast", "--url", down.URL, "--zone", "DE"}, 1, "carbongate at " + down.URL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCtl(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tt.code, tt.msg)
			}
		})
	}
}
