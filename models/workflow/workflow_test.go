package workflow_test

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/models/backtest"
	"github.com/carbongate/carbongate/models/ridge"
	"github.com/carbongate/carbongate/models/workflow"
)

var (
	trainUntil = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	evalTo     = time.Date(2021, 6, 27, 0, 0, 0, 0, time.UTC)
)

func load(tb testing.TB) map[forecast.Zone]*dataset.Table {
	tb.Helper()
	tables, err := bundled.Load()
	if err != nil {
		tb.Fatal(err)
	}
	return tables
}

// TestAccuracyGoal is the accuracy regression test of issue 6: trained
// on 2020, backtested on 2021-01-01..2021-06-27 (issued daily at 00:00
// UTC), the zone models' mean day-1 MAPE is at most 0.70× persistence's
// and every zone beats persistence on each of lead days 1–4 — for both
// signals; and the 80 % prediction intervals, calibrated inside 2020
// only, cover 70–90 % of the 2021 hours on average and 55–95 % in every
// zone.
func TestAccuracyGoal(t *testing.T) {
	t.Parallel()
	tables := load(t)
	out := t.TempDir()
	if _, err := workflow.Train(context.Background(), tables, out, workflow.TrainConfig{Until: trainUntil}); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []forecast.Signal{forecast.SignalDirect, forecast.SignalLifecycle} {
		t.Run(string(sig), func(t *testing.T) {
			rep, err := workflow.Evaluate(context.Background(), tables, out, workflow.EvalConfig{Signal: sig, From: trainUntil, To: evalTo})
			if err != nil {
				t.Fatal(err)
			}
			if scored, skipped := rep.Counts(); scored != 12*178 || skipped != 0 {
				t.Fatalf("scored %d issue days, skipped %d; want %d and 0", scored, skipped, 12*178)
			}
			var buf bytes.Buffer
			if err := backtest.WriteTable(&buf, rep); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + buf.String())
			var zoneD1, seasonalD1 float64
			for _, z := range rep.ZoneIDs() {
				m, p := rep.Zones[z][workflow.RowZone], rep.Zones[z][backtest.Persistence]
				for d := range backtest.LeadDays {
					if m.MAPE[d] >= p.MAPE[d] {
						t.Errorf("%s day %d: zone model MAPE %.2f, persistence %.2f", z, d+1, m.MAPE[d], p.MAPE[d])
					}
				}
				// The stronger naive baseline (yesterday's hours) is beaten on
				// day 1 in every zone too.
				sn := rep.Zones[z][backtest.SeasonalNaive]
				if m.MAPE[0] >= sn.MAPE[0] {
					t.Errorf("%s day 1: zone model MAPE %.2f, seasonal naive %.2f", z, m.MAPE[0], sn.MAPE[0])
				}
				zoneD1, seasonalD1 = zoneD1+m.MAPE[0], seasonalD1+sn.MAPE[0]
			}
			if r := zoneD1 / seasonalD1; r > 0.80 {
				t.Errorf("mean day-1 MAPE is %.3f× seasonal naive's, want ≤ 0.80× (published: 0.73× direct)", r)
			} else {
				t.Logf("mean day-1 MAPE %.3f× seasonal naive's", r)
			}
			for _, z := range rep.ZoneIDs() {
				m := rep.Zones[z][workflow.RowZone]
				if !m.Interval {
					t.Errorf("%s: the zone model gives no interval", z)
				} else if m.Coverage < 55 || m.Coverage > 95 {
					t.Errorf("%s: 80 %% interval covers %.1f %% of the hours, want 55–95 %%", z, m.Coverage)
				}
			}
			for _, s := range rep.Summaries() {
				if s.Model != workflow.RowZone {
					continue
				}
				if s.Zones != 12 || s.BeatsAll != 12 {
					t.Fatalf("zone models beat persistence on days 1–4 in %d of %d zones, want 12 of 12", s.BeatsAll, s.Zones)
				}
				if r := s.Ratio(); r > 0.70 {
					t.Errorf("mean day-1 MAPE %.2f is %.3f× persistence's %.2f, want ≤ 0.70×", s.MeanD1, r, s.PersistD1)
				}
				if s.Coverage < 70 || s.Coverage > 90 {
					t.Errorf("mean coverage of the 80 %% intervals %.1f %%, want 70–90 %%", s.Coverage)
				}
				return
			}
			t.Fatal("no zone-model row in the report")
		})
	}
}

// TestGenericUnseenZone fits the generic model on 11 zones and forecasts
// the 12th, which it must do better than persistence on day 1.
func TestGenericUnseenZone(t *testing.T) {
	t.Parallel()
	tables := load(t)
	const unseen = forecast.Zone("DE")
	var in []ridge.Input
	for z, tab := range tables {
		if z != unseen {
			in = append(in, ridge.Input{Zone: z, Series: tab.Series(forecast.SignalDirect)})
		}
	}
	slices.SortFunc(in, func(a, b ridge.Input) int { return cmp.Compare(a.Zone, b.Zone) })
	m, err := ridge.Fit(context.Background(), ridge.Spec{Name: "carbon-forecaster-generic", Signal: forecast.SignalDirect, Until: trainUntil, Config: ridge.DefaultConfig()}, in)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(m.Training().Zones, unseen) {
		t.Fatalf("generic model trained on %s", unseen)
	}
	cands, err := backtest.Baselines(unseen, forecast.SignalDirect, 168, 96)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := backtest.Run(context.Background(), backtest.Config{Signal: forecast.SignalDirect, From: trainUntil, To: evalTo},
		[]backtest.Zone{{Zone: unseen, Series: tables[unseen].Series(forecast.SignalDirect), Candidates: append(cands, backtest.Candidate{Name: "generic", Model: m})}})
	if err != nil {
		t.Fatal(err)
	}
	g, p := rep.Zones[unseen]["generic"].MAPE[0], rep.Zones[unseen][backtest.Persistence].MAPE[0]
	t.Logf("%s unseen: generic day-1 MAPE %.2f%%, persistence %.2f%% (ratio %.3f)", unseen, g, p, g/p)
	if g >= p {
		t.Fatalf("generic day-1 MAPE %.2f on unseen %s, not better than persistence %.2f", g, unseen, p)
	}
}

// TestTrainIgnoresDataAfterUntil changes every observation at or after the
// cut-off and checks that train writes the very same weights.
func TestTrainIgnoresDataAfterUntil(t *testing.T) {
	t.Parallel()
	src := load(t)
	until := time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)
	orig := map[forecast.Zone]*dataset.Table{}
	changed := map[forecast.Zone]*dataset.Table{}
	for _, z := range []forecast.Zone{"DE", "SE"} {
		tab := src[z]
		orig[z] = tab
		c := &dataset.Table{Zone: z, Start: tab.Start, Direct: slices.Clone(tab.Direct), Lifecycle: slices.Clone(tab.Lifecycle)}
		i, _ := tab.Series(forecast.SignalDirect).Index(until)
		for j := i; j < len(c.Direct); j++ {
			c.Direct[j] *= 2
			c.Lifecycle[j] += 50
		}
		changed[z] = c
	}
	a, b := t.TempDir(), t.TempDir()
	cfg := workflow.TrainConfig{Until: until, Workers: 1}
	ra, err := workflow.Train(context.Background(), orig, a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Train(context.Background(), changed, b, cfg); err != nil {
		t.Fatal(err)
	}
	if got, want := len(ra), 6; got != want {
		t.Fatalf("trained %d models, want %d (2 zones + generic, 2 signals)", got, want)
	}
	for _, r := range ra {
		rel, _ := filepath.Rel(a, r.Dir)
		wa, err := os.ReadFile(filepath.Join(a, rel, "weights.bin"))
		if err != nil {
			t.Fatal(err)
		}
		wb, err := os.ReadFile(filepath.Join(b, rel, "weights.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wa, wb) {
			t.Errorf("%s: weights differ when data after the cut-off changes", rel)
		}
	}
	// And a cut-off inside the data does change the model.
	cfg.Until = until.AddDate(0, 0, 7)
	c := t.TempDir()
	if _, err := workflow.Train(context.Background(), changed, c, cfg); err != nil {
		t.Fatal(err)
	}
	wa, _ := os.ReadFile(filepath.Join(a, "direct", "DE", "weights.bin"))
	wc, _ := os.ReadFile(filepath.Join(c, "direct", "DE", "weights.bin"))
	if bytes.Equal(wa, wc) {
		t.Fatal("a later cut-off over changed data left the weights unchanged; the test cannot see leaks")
	}
}

func TestTrainErrors(t *testing.T) {
	t.Parallel()
	tables := map[forecast.Zone]*dataset.Table{"DE": {Zone: "DE", Start: trainUntil, Direct: make([]float64, 48), Lifecycle: make([]float64, 48)}}
	tests := []struct {
		name string
		cfg  workflow.TrainConfig
		code string
	}{
		{"no cut-off", workflow.TrainConfig{}, forecast.EINVALID},
		{"unknown zone", workflow.TrainConfig{Until: evalTo, Zones: []forecast.Zone{"SE"}}, forecast.ENOTFOUND},
		{"too little data", workflow.TrainConfig{Until: evalTo}, forecast.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := workflow.Train(context.Background(), tables, t.TempDir(), tt.cfg)
			if got := forecast.ErrorCode(err); got != tt.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tt.code)
			}
		})
	}
}
