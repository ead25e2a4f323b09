package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
)

// writeData writes days of hourly synthetic data per zone as <zone>.csv.
func writeData(t *testing.T, days int, zones ...string) string {
	t.Helper()
	dir := t.TempDir()
	start := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for k, z := range zones {
		var b strings.Builder
		b.WriteString("datetime_utc,ci_direct,ci_lifecycle\n")
		for i := range days * 24 {
			d := 200 + 50*math.Sin(2*math.Pi*float64(i+3*k)/24) + 10*math.Cos(float64(i)*0.7)
			fmt.Fprintf(&b, "%s,%.2f,%.2f\n", start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), d, d+60)
		}
		if err := os.WriteFile(filepath.Join(dir, z+".csv"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func run(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestTrainEvaluate(t *testing.T) {
	t.Parallel()
	data := writeData(t, 40, "DE", "SE")
	out := filepath.Join(t.TempDir(), "models")
	code, stdout, stderr := run("train", "--data", data, "--until", "2020-01-31", "--out", out, "--signal", "direct")
	if code != 0 {
		t.Fatalf("train exit %d: %s", code, stderr)
	}
	for _, want := range []string{"carbon-forecaster-DE", "carbon-forecaster-SE", "carbon-forecaster-generic", "3 models"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("train output lacks %q:\n%s", want, stdout)
		}
	}
	for _, d := range []string{"direct/DE", "direct/SE", "direct/generic"} {
		if _, err := os.Stat(filepath.Join(out, d, "MLmodel")); err != nil {
			t.Fatalf("no model in %s: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "lifecycle")); err == nil {
		t.Fatal("--signal direct also trained lifecycle")
	}

	code, stdout, stderr = run("evaluate", "--data", data, "--models", out, "--from", "2020-01-31", "--to", "2020-02-07", "--signal", "direct", "--output", "json")
	if code != 0 {
		t.Fatalf("evaluate exit %d: %s", code, stderr)
	}
	var doc struct {
		Signal, From, To string
		Zones            map[string]map[string]map[string]*float64
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if doc.Signal != "direct" || doc.From != "2020-01-31" || doc.To != "2020-02-07" || len(doc.Zones) != 2 {
		t.Fatalf("report=%+v", doc)
	}
	for _, m := range []string{"zone", "generic", "seasonal-naive", "persistence"} {
		if v := doc.Zones["DE"][m]["mape_d1"]; v == nil {
			t.Fatalf("no mape_d1 for DE/%s:\n%s", m, stdout)
		}
	}
	// The data ends at 2020-02-10T00:00Z: issued 2020-02-07, 96 h run past it.
	if !strings.Contains(stderr, "14 issue days scored, 2 skipped") {
		t.Fatalf("stderr does not count skipped days: %q", stderr)
	}

	code, stdout, stderr = run("evaluate", "--data", data, "--models", out, "--from", "2020-01-31", "--to", "2020-02-05", "--signal", "direct", "--zones", "de")
	if code != 0 {
		t.Fatalf("evaluate table exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "DE    zone") || strings.Contains(stdout, "SE ") || !strings.Contains(stdout, "mean  persistence") {
		t.Fatalf("table:\n%s", stdout)
	}
}

func TestTrainEvaluateUsage(t *testing.T) {
	t.Parallel()
	data := writeData(t, 10, "DE")
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"train without flags", []string{"train"}, 2},
		{"train bad until", []string{"train", "--data", data, "--until", "soon", "--out", t.TempDir()}, 2},
		{"train bad signal", []string{"train", "--data", data, "--until", "2020-01-05", "--out", t.TempDir(), "--signal", "marginal"}, 2},
		{"train bad zone", []string{"train", "--data", data, "--until", "2020-01-05", "--out", t.TempDir(), "--zones", "D E"}, 2},
		{"train interval without folds", []string{"train", "--data", data, "--until", "2020-01-05", "--out", t.TempDir(), "--folds", "0"}, 2},
		{"train interval out of range", []string{"train", "--data", data, "--until", "2020-01-05", "--out", t.TempDir(), "--interval", "1.5"}, 2},
		{"train one fold", []string{"train", "--data", data, "--until", "2020-01-05", "--out", t.TempDir(), "--folds", "1"}, 2},
		{"train unknown zone", []string{"train", "--data", data, "--until", "2020-01-05", "--out", t.TempDir(), "--zones", "SE"}, 1},
		{"evaluate without signal", []string{"evaluate", "--data", data, "--models", t.TempDir(), "--from", "2020-01-08", "--to", "2020-01-09"}, 2},
		{"evaluate bad format", []string{"evaluate", "--data", data, "--models", t.TempDir(), "--from", "2020-01-08", "--to", "2020-01-09", "--signal", "direct", "--format", "xml"}, 2},
		{"evaluate reversed days", []string{"evaluate", "--data", data, "--models", t.TempDir(), "--from", "2020-01-09", "--to", "2020-01-08", "--signal", "direct"}, 2},
		{"evaluate without models", []string{"evaluate", "--data", data, "--models", t.TempDir(), "--from", "2020-01-08", "--to", "2020-01-09", "--signal", "direct"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if code, _, stderr := run(tt.args...); code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, stderr)
			}
		})
	}
}

// --interval and --folds reach the models: by default they carry an 80 %
// interval; with --interval 0 --folds 0 they are point models.
func TestTrainIntervalFlags(t *testing.T) {
	t.Parallel()
	data := writeData(t, 40, "DE")
	for _, tc := range []struct {
		args     []string
		interval bool
	}{
		{nil, true},
		{[]string{"--interval", "0", "--folds", "0"}, false},
	} {
		out := filepath.Join(t.TempDir(), "models")
		args := append([]string{"train", "--data", data, "--until", "2020-01-31", "--out", out, "--signal", "direct", "--zones", "DE"}, tc.args...)
		if code, _, stderr := run(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		m, err := artifact.Load(filepath.Join(out, "direct", "DE"))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(models.IntervalModel); ok != tc.interval {
			t.Fatalf("%v: interval model %v, want %v", tc.args, ok, tc.interval)
		}
	}
}
