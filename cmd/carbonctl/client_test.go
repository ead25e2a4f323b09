package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/apitest"
)

func TestScheduleCommand(t *testing.T) {
	t.Parallel()
	url := apitest.ServeBundled(t)
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
	url := apitest.ServeBundled(t)
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
	url := apitest.ServeBundled(t)
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
		// Checked before anything is sent: down's URL answers nothing.
		{"bad duration", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "banana"}, 2, "--duration \"banana\""},
		{"zero duration", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "PT0H"}, 2, "--duration"},
		{"negative power", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--power-watts", "-5"}, 2, "--power-watts"},
		{"NaN power", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--power-watts", "NaN"}, 2, "--power-watts"},
		{"infinite power", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--power-watts", "Inf"}, 2, "--power-watts"},
		{"fractional vcpus", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--vcpus", "4.5", "--provider", "aws"}, 2, "--vcpus"},
		{"zero utilization", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--instance-type", "m5.large", "--utilization", "0"}, 2, "--utilization"},
		{"NaN gate", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--run-now-below", "NaN"}, 2, "--run-now-below"},
		{"negative gate", []string{"schedule", "--url", down.URL, "--zones", "DE", "--duration", "3h", "--run-now-below", "-1"}, 2, "--run-now-below"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCtl(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tt.code, tt.msg)
			}
		})
	}
}

// TestClientPrintsServerTextSafely: control characters and bidirectional
// overrides in what a server sends are printed escaped, in answers and
// in errors; an empty forecast is an error.
func TestClientPrintsServerTextSafely(t *testing.T) {
	t.Parallel()
	evil := `DE\u001b[2J\u202eSE\r\n` // as JSON escapes: the decoded string holds them raw
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("zone") == "EMPTY":
			fmt.Fprint(w, `{"zone":"EMPTY","signal":"lifecycle","unit":"gCO2eq/kWh","start":"2021-06-01T00:00:00Z","values":[]}`)
		case r.URL.Path == "/v1/forecast":
			fmt.Fprintf(w, `{"zone":"%s","signal":"lifecycle","unit":"g\u0007","start":"2021-06-01T00:00:00Z","values":[1],"provenance":{"source":"zone","model":"%s"}}`, evil, evil)
		case r.URL.Path == "/v1/schedule":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"code":"invalid","field":"zones\u009b","message":"unknown zone %s"}}`, evil)
		}
	}))
	t.Cleanup(ts.Close)
	unsafe := func(s string) bool { return strings.ContainsAny(s, "\x1b\a\r\u202e\u009b") }
	code, out, errs := runCtl(t, "forecast", "--url", ts.URL, "--zone", "DE")
	if code != 0 || unsafe(out) || !strings.Contains(out, `DE\u001b[2J\u202eSE\u000d\u000a`) || !strings.Contains(out, `g\u0007`) {
		t.Errorf("forecast: exit %d, stdout %q, stderr %q; want the zone, model and unit escaped", code, out, errs)
	}
	code, out, errs = runCtl(t, "schedule", "--url", ts.URL, "--zones", "DE", "--duration", "3h")
	if code != 1 || unsafe(errs) || !strings.Contains(errs, `unknown zone DE\u001b[2J`) || !strings.Contains(errs, `zones\u009b`) {
		t.Errorf("schedule: exit %d, stdout %q, stderr %q; want the server's message escaped", code, out, errs)
	}
	code, _, errs = runCtl(t, "forecast", "--url", ts.URL, "--zone", "EMPTY")
	if code != 1 || !strings.Contains(errs, "no values") {
		t.Errorf("empty forecast: exit %d, stderr %q; want 1 saying it has no values", code, errs)
	}
	code, _, errs = runCtl(t, "forecast", "--url", ts.URL, "--zone", "EMPTY", "--output", "json")
	if code != 1 || !strings.Contains(errs, "no values") {
		t.Errorf("empty forecast as JSON: exit %d, stderr %q; want 1 saying it has no values", code, errs)
	}
}
