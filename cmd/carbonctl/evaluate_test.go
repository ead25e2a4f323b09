package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/models/backtest"
	"github.com/carbongate/carbongate/models/evaluate"
	"github.com/carbongate/carbongate/models/workflow"
)

// memDB is a store.DB over store.Memory: what --store opens in unit tests.
type memDB struct{ *store.Memory }

func (memDB) Migrate(context.Context) error { return nil }
func (memDB) Close()                        {}

func memOpener(m *store.Memory) openStoreFunc {
	return func(context.Context, string) (store.DB, error) { return memDB{m}, nil }
}

var evalDay0 = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)

// evalObserved is the synthetic observed intensity of hour t: a daily sine
// around 100.
func evalObserved(t time.Time) float64 {
	return 100 + 40*math.Sin(2*math.Pi*float64(t.Hour())/24)
}

// observeDE stores days of DE direct observations from evalDay0.
func observeDE(t *testing.T, m store.Observed, days int) {
	t.Helper()
	obs := make([]store.Observation, days*24)
	for i := range obs {
		at := evalDay0.Add(time.Duration(i) * time.Hour)
		obs[i] = store.Observation{Time: at, Value: evalObserved(at)}
	}
	if err := m.UpsertObserved(context.Background(), "DE", forecast.SignalDirect, obs); err != nil {
		t.Fatal(err)
	}
}

// backfillDE writes daily 96-hour DE forecasts of model/version issued on
// the days [first, last) after evalDay0: observed × (1 + e), with a ±band
// interval when band > 0.
func backfillDE(t *testing.T, m store.Forecasts, model, version string, first, last int, e, band float64) {
	t.Helper()
	var rows []store.ForecastRow
	for d := first; d < last; d++ {
		issued := evalDay0.AddDate(0, 0, d)
		for h := range 96 {
			at := issued.Add(time.Duration(h) * time.Hour)
			v := evalObserved(at) * (1 + e)
			lo, hi := math.NaN(), math.NaN()
			if band > 0 {
				lo, hi = v*(1-band), v*(1+band)
			}
			rows = append(rows, store.ForecastRow{Zone: "DE", Signal: forecast.SignalDirect, ModelName: model, ModelVersion: version,
				IssuedAt: issued, TargetTime: at, Value: v, Lower: lo, Upper: hi})
		}
	}
	if err := m.WriteForecasts(context.Background(), "test", nil, rows); err != nil {
		t.Fatal(err)
	}
}

// runWith runs a command function with a memory store; code as Main.
func runWith(fn func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) error, args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	err := fn(context.Background(), args, &o, &e)
	if err == nil {
		return 0, o.String(), e.String()
	}
	return cli.ExitCode(err), o.String(), e.String() + err.Error()
}

func evaluateMem(m *store.Memory) func(context.Context, []string, *bytes.Buffer, *bytes.Buffer) error {
	return func(ctx context.Context, args []string, o, e *bytes.Buffer) error {
		return evaluateWith(ctx, args, o, e, memOpener(m))
	}
}

func TestEvaluateStore(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	observeDE(t, m, 20)
	backfillDE(t, m, "carbon-forecaster-DE", "3", 0, 10, 0.08, 0.1)
	backfillDE(t, m, "carbon-forecaster-DE", "4", 0, 10, 0.04, 0)
	backfillDE(t, m, "carbon-forecaster-generic", "1", 0, 10, 0.06, 0)
	backfillDE(t, m, "other", "1", 0, 10, 0.5, 0)
	const url = "postgres://localhost/unused"

	code, out, errOut := runWith(evaluateMem(m), "--store", url, "--model", "carbon-forecaster-*", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Results []struct {
			ModelName    string              `json:"model_name"`
			ModelVersion string              `json:"model_version"`
			Scored       int                 `json:"scored"`
			Metrics      map[string]*float64 `json:"metrics"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var got []string
	for _, r := range doc.Results {
		got = append(got, r.ModelName+"/"+r.ModelVersion)
	}
	if strings.Join(got, " ") != "carbon-forecaster-DE/3 carbon-forecaster-DE/4 carbon-forecaster-generic/1" {
		t.Fatalf("results %q", got)
	}
	if v := doc.Results[1].Metrics["mape_d1"]; v == nil || math.Abs(*v-4) > 1e-9 || doc.Results[1].Scored != 10 {
		t.Fatalf("v4 mape_d1 = %v, scored %d", v, doc.Results[1].Scored)
	}
	if !strings.Contains(errOut, "3 series, 30 issued forecasts scored, 0 skipped") {
		t.Fatalf("stderr %q", errOut)
	}

	// Table of two versions over the issue days 2..5: 4 issues each.
	code, out, errOut = runWith(evaluateMem(m), "--store", url, "--model", "carbon-forecaster-DE", "--versions", "3, 4",
		"--from", "2021-03-03", "--to", "2021-03-06", "--zones", "de", "--signal", "direct")
	if code != 0 {
		t.Fatalf("table: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "DE    direct  carbon-forecaster-DE  3") || !strings.Contains(lines[2], "8.00") || !strings.Contains(lines[3], "4.00") {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(errOut, "8 issued forecasts scored") {
		t.Fatalf("stderr %q", errOut)
	}

	// Plots, with observations from a data directory instead of the store.
	plots := filepath.Join(t.TempDir(), "plots")
	code, _, errOut = runWith(evaluateMem(m), "--store", url, "--model", "carbon-forecaster-DE", "--plots", plots,
		"--week", "2021-03-02", "--plot-size", "640x400")
	if code != 0 {
		t.Fatalf("plots: exit %d: %s", code, errOut)
	}
	for _, name := range []string{"comparison-DE-direct.png", "lead-hours-DE-direct.png", "week-DE-direct-2021-03-02.png"} {
		checkPNG(t, filepath.Join(plots, name), 640, 400)
		if !strings.Contains(errOut, name) {
			t.Errorf("stderr does not name %s: %q", name, errOut)
		}
	}
}

func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if s := img.Bounds().Size(); s.X != w || s.Y != h {
		t.Fatalf("%s is %v, want %dx%d", path, s, w, h)
	}
}

// TestEvaluateStoreData: --data replaces the store's observations; a data
// set without the forecast days skips every issue.
func TestEvaluateStoreData(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	backfillDE(t, m, "carbon-forecaster-DE", "1", 0, 3, 0.1, 0)
	data := writeData(t, 10, "DE") // 2020: no observation of 2021
	code, out, errOut := runWith(evaluateMem(m), "--store", "postgres://x/y", "--data", data, "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"skipped": 3`) || !strings.Contains(errOut, "0 issued forecasts scored, 3 skipped") {
		t.Fatalf("out %s\nstderr %s", out, errOut)
	}
}

func TestEvaluateStoreErrors(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	observeDE(t, m, 5)
	backfillDE(t, m, "carbon-forecaster-DE", "1", 0, 1, 0.1, 0)
	const url = "postgres://localhost/unused"
	for _, c := range []struct {
		note string
		args []string
		code int
		want string
	}{
		{"bad scheme", []string{"--store", "mysql://x"}, 2, "--store"},
		{"models with store", []string{"--store", url, "--models", "dir"}, 2, "--models"},
		{"week without plots", []string{"--store", url, "--week", "2021-03-01"}, 2, "--week"},
		{"bad plot size", []string{"--store", url, "--plot-size", "12x"}, 2, "--plot-size"},
		{"tiny plot", []string{"--store", url, "--plot-size", "10x10"}, 2, "--plot-size"},
		{"reversed days", []string{"--store", url, "--from", "2021-03-05", "--to", "2021-03-01"}, 2, "--to"},
		{"bad lead days", []string{"--store", url, "--lead-days", "0"}, 2, "--lead-days"},
		{"bad signal", []string{"--store", url, "--signal", "nuclear"}, 2, "--signal"},
		{"--common without --store", []string{"--data", "bundled", "--models", "m", "--from", "2021-01-01", "--to", "2021-01-02", "--signal", "direct", "--common"}, 2, "--common"},
		{"bad format", []string{"--store", url, "--output", "xml"}, 2, "--output"},
		{"bad format, old name", []string{"--store", url, "--format", "xml"}, 2, "--output"},
		{"no match", []string{"--store", url, "--model", "nope"}, 1, "no forecast in the store"},
		{"model without store", []string{"--data", "bundled", "--models", "m", "--from", "2021-01-01", "--to", "2021-01-02", "--signal", "direct", "--model", "x"}, 2, "--store"},
	} {
		t.Run(c.note, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runWith(evaluateMem(m), c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d (want %d): %s", code, c.code, errOut)
			}
		})
	}
}

// TestEvaluateLocalPlots: the in-process mode keeps its backtest report and
// also draws plots of the forecasts it issues.
func TestEvaluateLocalPlots(t *testing.T) {
	t.Parallel()
	data := writeData(t, 40, "DE")
	models := filepath.Join(t.TempDir(), "models")
	if code, _, errOut := run("train", "--data", data, "--until", "2020-01-31", "--out", models, "--signal", "direct"); code != 0 {
		t.Fatalf("train exit %d: %s", code, errOut)
	}
	plots := filepath.Join(t.TempDir(), "plots")
	code, out, errOut := run("evaluate", "--data", data, "--models", models, "--from", "2020-01-31", "--to", "2020-02-05",
		"--signal", "direct", "--plots", plots, "--plot-size", "500x300")
	if code != 0 {
		t.Fatalf("evaluate exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "DE    zone") || !strings.Contains(out, "mean  persistence") {
		t.Fatalf("backtest table changed:\n%s", out)
	}
	for _, name := range []string{"comparison-DE-direct.png", "lead-hours-DE-direct.png", "week-DE-direct-2020-01-31.png"} {
		checkPNG(t, filepath.Join(plots, name), 500, 300)
	}
}

// TestIssueLocalMatchesBacktest: scoring the forecasts issueLocal stores
// gives the backtest's MAPE per lead day, an independent implementation.
func TestIssueLocalMatchesBacktest(t *testing.T) {
	t.Parallel()
	data := writeData(t, 40, "DE")
	models := filepath.Join(t.TempDir(), "models")
	if code, _, errOut := run("train", "--data", data, "--until", "2020-01-31", "--out", models, "--signal", "direct"); code != 0 {
		t.Fatalf("train exit %d: %s", code, errOut)
	}
	tables, err := loadData(data, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := workflow.EvalConfig{Signal: forecast.SignalDirect, From: time.Date(2020, 1, 31, 0, 0, 0, 0, time.UTC), To: time.Date(2020, 2, 8, 0, 0, 0, 0, time.UTC)}
	bt, err := workflow.Evaluate(ctx, tables, models, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := issueLocal(ctx, tables, models, cfg)
	if err != nil {
		t.Fatal(err)
	}
	set, err := evaluate.Load(ctx, mem, evaluate.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluate.Score(ctx, set, tableObservations(tables))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"carbon-forecaster-DE": workflow.RowZone, "carbon-forecaster-generic": workflow.RowGeneric,
		backtest.Persistence: backtest.Persistence, backtest.SeasonalNaive: backtest.SeasonalNaive}
	if len(rep.Results) != len(names) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(names))
	}
	for _, r := range rep.Results {
		want := bt.Zones["DE"][names[r.ModelName]]
		if r.Scored != want.Days {
			t.Errorf("%s: %d issues scored, backtest %d", r.ModelName, r.Scored, want.Days)
		}
		for d := range backtest.LeadDays {
			if got := r.Days[d].MAPE.Mean; math.Abs(got-want.MAPE[d]) > 1e-9 {
				t.Errorf("%s day %d: MAPE %v, backtest %v", r.ModelName, d+1, got, want.MAPE[d])
			}
		}
	}
}

// A vendor's forecasts stored hourly by the gateway (vendorfc.Rows, 24
// hours each, 2 % high) beside a model's daily backfill (4 % high): with
// --common both are scored on the issue times both have (00:00 of the
// vendor's days), each with its own error.
func TestEvaluateVendorCommon(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	observeDE(t, m, 20)
	backfillDE(t, m, "carbon-forecaster-DE", "3", 0, 10, 0.04, 0)
	var rows []store.ForecastRow
	for h := 3 * 24; h < 6*24; h++ {
		start := evalDay0.Add(time.Duration(h) * time.Hour)
		vals := make([]float64, 24)
		for i := range vals {
			vals[i] = evalObserved(start.Add(time.Duration(i)*time.Hour)) * 1.02
		}
		rows = append(rows, vendorfc.Rows(vendorfc.Issue{Vendor: "electricitymaps", Zone: "DE", Signal: forecast.SignalDirect, Start: start, Values: vals})...)
	}
	if err := m.WriteForecasts(context.Background(), vendorfc.Job("electricitymaps"), nil, rows); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		scored map[string]int
	}{
		{nil, map[string]int{"carbon-forecaster-DE": 10, "vendor:electricitymaps": 72}},
		{[]string{"--common"}, map[string]int{"carbon-forecaster-DE": 3, "vendor:electricitymaps": 3}},
	} {
		code, out, errOut := runWith(evaluateMem(m), append([]string{"--store", "postgres://localhost/unused", "--lead-days", "1", "--output", "json"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.args, code, errOut)
		}
		var doc struct {
			Results []struct {
				ModelName string              `json:"model_name"`
				Scored    int                 `json:"scored"`
				Metrics   map[string]*float64 `json:"metrics"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		mape := map[string]float64{"carbon-forecaster-DE": 4, "vendor:electricitymaps": 2}
		if len(doc.Results) != 2 {
			t.Fatalf("%q: results %s", tc.args, out)
		}
		for _, r := range doc.Results {
			if v := r.Metrics["mape_d1"]; r.Scored != tc.scored[r.ModelName] || v == nil || math.Abs(*v-mape[r.ModelName]) > 1e-9 {
				t.Fatalf("%q: %s scored %d, mape_d1 %v; want %d and %v", tc.args, r.ModelName, r.Scored, v, tc.scored[r.ModelName], mape[r.ModelName])
			}
		}
	}
	if code, _, errOut := runWith(evaluateMem(m), "--store", "postgres://localhost/unused", "--signal", "marginal"); code != 1 || !strings.Contains(errOut, "no forecast") {
		t.Fatalf("--signal marginal with none stored: exit %d: %s", code, errOut)
	}
}
