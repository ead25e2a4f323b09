package evaluate_test

import (
	"context"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/evaluate"
)

// TestCompare: the champion (v1, 8 % error) forecasts days 0-9, the
// challenger (v2) days 5-14 with 4 % error on the common days 5-9 and 50 %
// outside them: only the common window counts.
func TestCompare(t *testing.T) {
	t.Parallel()
	m := fixture(t, 20)
	for i := range 15 {
		at := day0.AddDate(0, 0, i)
		if i < 10 {
			write(t, m, "carbon-forecaster-DE", issue{version: "1", at: at, hours: 96, err: constErr(0.08)})
		}
		if i >= 5 {
			e := 0.04
			if i >= 10 {
				e = 0.5
			}
			write(t, m, "carbon-forecaster-DE", issue{version: "2", at: at, hours: 96, err: constErr(e)})
		}
	}
	gate := evaluate.Gate{Model: "carbon-forecaster-DE", Champion: "1", Challenger: "2", Metric: "mape_d1"}
	for _, c := range []struct {
		note    string
		min     float64
		promote bool
	}{
		{"strictly lower promotes", 0, true},
		{"40 % better is enough for 0.4", 0.4, true},
		{"not 60 % better", 0.6, false},
	} {
		g := gate
		g.MinImprovement = c.min
		v, err := evaluate.Compare(context.Background(), m, m, g)
		if err != nil {
			t.Fatal(err)
		}
		if v.Promote != c.promote || !near(v.Champion, 8) || !near(v.Challenger, 4) || v.Issues != 5 {
			t.Errorf("%s: %+v", c.note, v)
		}
		if got, want := v.Window(), "2021-03-06/2021-03-10"; got != want {
			t.Errorf("window %s, want %s", got, want)
		}
		if v.Signal != forecast.SignalDirect || len(v.Zones) != 1 || v.Zones[0] != "DE" {
			t.Errorf("signal %s zones %v", v.Signal, v.Zones)
		}
	}
	// Reversed roles: the old version is not better.
	rev := gate
	rev.Champion, rev.Challenger = "2", "1"
	if v, err := evaluate.Compare(context.Background(), m, m, rev); err != nil || v.Promote {
		t.Fatalf("reversed: %+v, %v", v, err)
	}
}

func TestCompareErrors(t *testing.T) {
	t.Parallel()
	m := fixture(t, 20)
	write(t, m, "carbon-forecaster-DE",
		issue{version: "1", at: day0, hours: 96, err: constErr(0.1)},
		issue{version: "2", at: day0.AddDate(0, 0, 1), hours: 96, err: constErr(0.1)},
		issue{version: "3", at: day0.AddDate(0, 0, 30), hours: 96, err: constErr(0.1)},
		issue{version: "4", at: day0.AddDate(0, 0, 30), hours: 96, err: constErr(0.1)})
	base := evaluate.Gate{Model: "carbon-forecaster-DE", Champion: "1", Challenger: "2", Metric: "mape_d1"}
	for _, c := range []struct {
		note  string
		edit  func(*evaluate.Gate)
		code  string
		field string
	}{
		{"no overlap", func(*evaluate.Gate) {}, forecast.ENOTFOUND, "challenger"},
		{"no observations in the window", func(g *evaluate.Gate) { g.Champion, g.Challenger = "3", "4" }, forecast.EUNAVAILABLE, ""},
		{"unknown metric", func(g *evaluate.Gate) { g.Metric = "rmse" }, forecast.EINVALID, "metric"},
		{"coverage is no error", func(g *evaluate.Gate) { g.Metric = "coverage_d1" }, forecast.EINVALID, "metric"},
		{"improvement not a fraction", func(g *evaluate.Gate) { g.MinImprovement = 1 }, forecast.EINVALID, "min_improvement"},
		{"same version", func(g *evaluate.Gate) { g.Challenger = "1" }, forecast.EINVALID, "challenger"},
	} {
		g := base
		c.edit(&g)
		_, err := evaluate.Compare(context.Background(), m, m, g)
		if forecast.ErrorCode(err) != c.code || forecast.ErrorField(err) != c.field {
			t.Errorf("%s: %v, want %s %q", c.note, err, c.code, c.field)
		}
	}
}

// TestWeek: with two issues overlapping, each hour takes the latest
// forecast issued at or before it (day-1 hours), intervals included.
func TestWeek(t *testing.T) {
	t.Parallel()
	m := fixture(t, 20)
	write(t, m, "m",
		issue{version: "1", at: day0, hours: 96, err: constErr(0.1), band: 0.2},
		issue{version: "1", at: day0.AddDate(0, 0, 1), hours: 96, err: constErr(0.3), band: 0.2},
		issue{version: "2", at: day0.AddDate(0, 0, 10), hours: 24, err: constErr(0.1)})
	set, err := evaluate.Load(context.Background(), m, evaluate.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := evaluate.Week(context.Background(), set, m, "DE", day0, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 1 || tr[0].ModelVersion != "1" || len(tr[0].Value) != 168 || !tr[0].HasInterval() {
		t.Fatalf("traces %+v", tr)
	}
	w := tr[0]
	for _, c := range []struct {
		hour int
		err  float64 // NaN: no forecast
	}{{0, 0.1}, {23, 0.1}, {24, 0.3}, {47, 0.3}, {48, -1}} {
		at := day0.Add(time.Duration(c.hour) * time.Hour)
		if c.err < 0 {
			if w.Value[c.hour] == w.Value[c.hour] {
				t.Errorf("hour %d = %v, want NaN (day 3 is no day-1 hour of any issue)", c.hour, w.Value[c.hour])
			}
			continue
		}
		if want := observedAt(at) * (1 + c.err); !near(w.Value[c.hour], want) || !near(w.Observed[c.hour], observedAt(at)) {
			t.Errorf("hour %d: value %v observed %v, want %v", c.hour, w.Value[c.hour], w.Observed[c.hour], want)
		}
	}
	if _, err := evaluate.Week(context.Background(), set, m, "", day0, 0); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("zero days: %v", err)
	}
}
