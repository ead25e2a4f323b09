package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast/store"
)

// TestEvaluateDecisionsLocal: in-process replay of trained models, as a
// table and as JSON; the shapes from a file.
func TestEvaluateDecisionsLocal(t *testing.T) {
	t.Parallel()
	data := writeData(t, 45, "DE", "SE")
	models := filepath.Join(t.TempDir(), "models")
	if code, _, errOut := run("train", "--data", data, "--until", "2020-01-31", "--out", models, "--signal", "direct"); code != 0 {
		t.Fatalf("train exit %d: %s", code, errOut)
	}
	args := []string{"evaluate", "--decisions", "--data", data, "--models", models, "--from", "2020-01-31", "--to", "2020-02-10", "--signal", "direct"}
	code, out, errOut := run(args...)
	if code != 0 {
		t.Fatalf("evaluate exit %d: %s", code, errOut)
	}
	for _, want := range []string{"carbongate %", "generic %", "seasonal-naive %", "8h/48h    DE", "mean"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	shapes := filepath.Join(t.TempDir(), "shapes")
	if err := os.WriteFile(shapes, []byte("# a job that may move to SE\n2h/24h@DE+SE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(append(args, "--shapes-file", shapes, "--every", "12h", "--output", "json")...)
	if code != 0 {
		t.Fatalf("evaluate exit %d: %s", code, errOut)
	}
	var rep struct {
		Every string
		Rows  []struct {
			Zone    string
			Issues  int
			Oracle  struct{ Capture float64 }
			Sources []struct {
				Source  string
				Capture *float64
			}
		}
		Capture map[string]*float64
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// 11 days every 12 h, the last day's windows run past the data.
	if rep.Every != "12h" || len(rep.Rows) != 1 || rep.Rows[0].Zone != "DE+SE" || rep.Rows[0].Issues < 18 || rep.Rows[0].Oracle.Capture != 1 {
		t.Fatalf("report %+v", rep)
	}
	if c := rep.Capture["carbongate"]; c == nil || !(*c > 0.5 && *c <= 1) {
		t.Fatalf("carbongate capture %v on a smooth synthetic series, want in (0.5, 1]", c)
	}
}

// TestEvaluateDecisionsStore: each stored model version is a source; a
// forecast that is the observation shifted by a constant factor captures
// all the oracle's saving.
func TestEvaluateDecisionsStore(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	observeDE(t, m, 15)
	backfillDE(t, m, "carbon-forecaster-DE", "1", 1, 10, 0.08, 0)
	plots := t.TempDir()
	code, out, errOut := runWith(evaluateMem(m), "--decisions", "--store", "postgres://x/y", "--shapes", "1h/24h", "--every", "24h", "--output", "json",
		"--plots", plots, "--plot-size", "320x200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if st, err := os.Stat(filepath.Join(plots, "capture-1h-24h.png")); err != nil || st.Size() == 0 || !strings.Contains(errOut, "capture-1h-24h.png") {
		t.Fatalf("--plots: %v, stderr %s", err, errOut)
	}
	var rep struct {
		Sources []string
		Capture map[string]float64
		Shapes  []struct{ Issues int }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(rep.Sources, ",") != "carbon-forecaster-*@1,seasonal-naive" || rep.Shapes[0].Issues != 9 ||
		math.Abs(rep.Capture["carbon-forecaster-*@1"]-1) > 1e-9 {
		t.Fatalf("report %+v", rep)
	}
}

func TestEvaluateDecisionsErrors(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	observeDE(t, m, 5)
	base := []string{"--data", "bundled", "--models", "m", "--from", "2021-01-01", "--to", "2021-01-02", "--signal", "direct"}
	for _, c := range []struct {
		note string
		args []string
		want string
	}{
		{"bad shape", append([]string{"--decisions", "--shapes", "3h/2h"}, base...), "--shapes"},
		{"shapes file missing", append([]string{"--decisions", "--shapes-file", "/nonexistent"}, base...), "--shapes-file"},
		{"every not hours", append([]string{"--decisions", "--every", "90m"}, base...), "--every"},
		{"redecide not hours", append([]string{"--decisions", "--redecide", "30m"}, base...), "--redecide"},
		{"redecide without decisions", append([]string{"--redecide", "6h"}, base...), "--decisions"},
		{"shapes without decisions", append([]string{"--shapes", "1h/2h"}, base...), "--decisions"},
		{"week", append([]string{"--decisions", "--plots", "p", "--week", "2021-01-01"}, base...), "--week"},
		{"redecide gain without redecide", append([]string{"--decisions", "--redecide-gain", "0.05"}, base...), "--redecide-gain"},
		{"redecide gain 1", append([]string{"--decisions", "--redecide", "1h", "--redecide-gain", "1"}, base...), "--redecide-gain"},
		{"redecide gain without decisions", append([]string{"--redecide-gain", "0.05"}, base...), "--decisions"},
		{"missing flags", []string{"--decisions", "--data", "bundled"}, "required"},
		{"from after to", []string{"--decisions", "--data", "bundled", "--models", "m", "--from", "2021-01-03", "--to", "2021-01-02", "--signal", "direct"}, "--from"},
		{"models with store", []string{"--decisions", "--store", "postgres://x/y", "--models", "m"}, "--models"},
	} {
		t.Run(c.note, func(t *testing.T) {
			code, _, errOut := runWith(evaluateMem(m), c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want 2): %s", code, errOut)
			}
		})
	}
}
