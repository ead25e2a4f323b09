package decisions_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/decisions"
)

var t0 = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)

// fixed forecasts the same values at every issue, from the issue time.
type fixed map[forecast.Zone][]float64

func (f fixed) Issue(_ context.Context, z forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error) {
	v, ok := f[z]
	if !ok || len(v) < hours {
		return forecast.Series{}, false, nil
	}
	return forecast.Series{Start: at, Values: v[:hours]}, true, nil
}

// perfect forecasts the observations themselves.
type perfect map[forecast.Zone]forecast.Series

func (p perfect) Issue(_ context.Context, z forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error) {
	w := p[z].Window(at, at.Add(time.Duration(hours)*time.Hour))
	return w, w.Len() == hours, nil
}

func series(v ...float64) forecast.Series { return forecast.Series{Start: t0, Values: v} }

func shape(t *testing.T, s string) decisions.Shape {
	t.Helper()
	sh, err := decisions.ParseShape(s)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// One issue, one hour-long job within 4 hours; observed 10 8 2 6: running
// now costs 10, the oracle runs at 2 (saving 8). Each source's pick and
// saving are worked out by hand.
func TestRunOneIssueByHand(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(10, 8, 2, 6, 4, 12)}
	sources := []decisions.Source{
		{Name: "perfect", Forecasts: perfect(obs)},
		{Name: "flat", Forecasts: fixed{"DE": {5, 5, 5, 5}}},            // ties: the earliest start, now
		{Name: "late", Forecasts: fixed{"DE": {5, 5, 5, 1}}},            // picks hour 3: 6, saving 4
		{Name: "second", Forecasts: fixed{"DE": {9, 1, 3, 7}}},          // picks hour 1: 8, saving 2
		{Name: "beyond", Forecasts: fixed{"DE": {9, 9, 9, 9, 0, 0, 0}}}, // hour 4 is past the slack: ties, now
	}
	rep, err := decisions.Run(context.Background(), decisions.Config{
		Shapes: []decisions.Shape{shape(t, "1h/4h")}, Zones: []forecast.Zone{"DE"}, From: t0, To: t0,
	}, obs, sources)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || len(rep.Shapes) != 1 {
		t.Fatalf("rows %d, shapes %d, want 1 and 1", len(rep.Rows), len(rep.Shapes))
	}
	r := rep.Rows[0]
	if r.Issues != 1 || r.Skipped != 0 || r.RunNow != 10 || r.Oracle.Saving != 8 || r.Oracle.Capture != 1 || !near(r.Oracle.SavingPct, 80) {
		t.Fatalf("row %+v, want 1 issue, run-now 10, oracle saving 8 (80 %%), capture 1", r)
	}
	want := map[string]float64{"perfect": 8, "flat": 0, "late": 4, "second": 2, "beyond": 0}
	for _, o := range r.Sources {
		if got := o.Saving; !near(got, want[o.Source]) || !near(o.Capture, want[o.Source]/8) {
			t.Errorf("%s: saving %v capture %v, want %v and %v", o.Source, got, o.Capture, want[o.Source], want[o.Source]/8)
		}
		if c := rep.Capture[o.Source]; !near(c, want[o.Source]/8) {
			t.Errorf("%s: mean capture %v, want %v", o.Source, c, want[o.Source]/8)
		}
	}
}

// A forecast that ranks the hours backwards picks the dearest window:
// negative capture.
func TestRunBackwardsIsNegative(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(5, 8, 2, 6)}
	rep, err := decisions.Run(context.Background(), decisions.Config{
		Shapes: []decisions.Shape{shape(t, "1h/4h")}, Zones: []forecast.Zone{"DE"}, From: t0, To: t0,
	}, obs, []decisions.Source{{Name: "backwards", Forecasts: fixed{"DE": {-5, -8, -2, -6}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Picks hour 1 (8): saving −3 against an oracle saving of 3.
	if o := rep.Rows[0].Sources[0]; o.Saving != -3 || o.Capture != -1 {
		t.Fatalf("outcome %+v, want saving −3, capture −1", o)
	}
}

// On a strictly daily series the last day repeated is the truth: seasonal
// naive captures all of the oracle's saving, over many issues and every
// shape, and the pooled and mean captures are 1 as well.
func TestSeasonalNaiveOnDailySeriesIsOracle(t *testing.T) {
	days := 10
	v := make([]float64, days*24)
	for i := range v {
		v[i] = 200 + 100*math.Sin(2*math.Pi*float64(i%24)/24) + float64(i%24%5) // no ties
	}
	obs := map[forecast.Zone]forecast.Series{"DE": series(v...), "SE": series(v...)}
	naive, err := decisions.NaiveForecasts(obs, forecast.SignalLifecycle, 48)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := decisions.Run(context.Background(), decisions.Config{
		Shapes: decisions.DefaultShapes(), Zones: []forecast.Zone{"SE", "DE"}, From: t0, To: t0.Add(time.Duration(days*24-1) * time.Hour), Every: 3 * time.Hour,
	}, obs, []decisions.Source{{Name: decisions.SeasonalNaive, Forecasts: naive}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 6 || rep.Rows[0].Zone != "DE" || rep.Rows[1].Zone != "SE" {
		t.Fatalf("rows %+v, want 3 shapes × DE, SE in zone order", rep.Rows)
	}
	for _, r := range rep.Rows {
		// Issues need a day of history before and the slack after.
		want := (days*24 - 24 - int(r.Shape.Slack/time.Hour)) / 3
		if r.Issues < want || r.Issues > want+1 || r.Issues+r.Skipped != days*8 {
			t.Errorf("%s %s: %d issues and %d skipped, want about %d of %d", r.Shape, r.Zone, r.Issues, r.Skipped, want, days*8)
		}
		if o := r.Sources[0]; !near(o.Capture, 1) || !near(o.Saving, r.Oracle.Saving) || !(o.Saving > 0) {
			t.Errorf("%s %s: %+v, oracle %+v, want capture 1", r.Shape, r.Zone, o, r.Oracle)
		}
	}
	if c := rep.Capture[decisions.SeasonalNaive]; !near(c, 1) {
		t.Fatalf("mean capture %v, want 1", c)
	}
}

// Pooling sums savings over the zones' issues: DE saves 8 of 8 and SE 0 of
// 2, so the shape captures 8/10, not the mean of 1 and 0.
func TestSummaryPoolsSavings(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(10, 2), "SE": series(4, 2)}
	src := fixed{"DE": {9, 1}, "SE": {1, 9}}
	rep, err := decisions.Run(context.Background(), decisions.Config{
		Shapes: []decisions.Shape{shape(t, "1h/2h")}, Zones: []forecast.Zone{"DE", "SE"}, From: t0, To: t0,
	}, obs, []decisions.Source{{Name: "x", Forecasts: src}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Shapes[0]
	if s.Issues != 2 || s.RunNow != 7 || s.Oracle.Saving != 5 || !near(s.Sources[0].Saving, 4) || !near(s.Sources[0].Capture, 0.8) {
		t.Fatalf("summary %+v, want 2 issues, run-now 7, oracle saving 5, source saving 4 (capture 0.8)", s)
	}
	if c := rep.Rows[1].Sources[0].Capture; c != 0 {
		t.Fatalf("SE capture %v, want 0", c)
	}
}

// A shape with zones chooses among them; the baseline runs now in the
// first zone.
func TestRunZoneSet(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(300, 100, 200), "SE": series(50, 40, 30)}
	rep, err := decisions.Run(context.Background(), decisions.Config{
		Shapes: []decisions.Shape{shape(t, "1h/3h@DE+SE")}, From: t0, To: t0,
	}, obs, []decisions.Source{
		{Name: "right", Forecasts: fixed{"DE": {9, 9, 9}, "SE": {1, 1, 1}}}, // SE now: 50
		{Name: "wrong", Forecasts: fixed{"DE": {9, 0, 9}, "SE": {1, 1, 1}}}, // DE at 1: 100
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Rows[0]
	if r.Zone != "DE+SE" || r.RunNow != 300 || r.Oracle.Saving != 270 || r.Sources[0].Saving != 250 || r.Sources[1].Saving != 200 {
		t.Fatalf("row %+v, want DE+SE, run-now 300, oracle 270, right 250, wrong 200", r)
	}
}

// An issue is skipped for every source when an observation of its window
// is missing or one source has no forecast, so that all are scored on the
// same issues.
func TestRunSkips(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(10, 8, math.NaN(), 6, 4, 12, 1, 1)}
	rep, err := decisions.Run(context.Background(), decisions.Config{
		Shapes: []decisions.Shape{shape(t, "1h/2h")}, Zones: []forecast.Zone{"DE"}, From: t0, To: t0.Add(6 * time.Hour), Every: 2 * time.Hour,
	}, obs, []decisions.Source{
		{Name: "perfect", Forecasts: perfect(obs)},
		{Name: "partial", Forecasts: partial{perfect(obs), t0.Add(4 * time.Hour)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Issues at 0 (8 saves 2), 2 (NaN: skipped), 4 (no partial forecast:
	// skipped), 6 (1 1: nothing to save).
	r := rep.Rows[0]
	if r.Issues != 2 || r.Skipped != 2 || r.Oracle.Saving != 1 || r.Sources[1].Saving != 1 {
		t.Fatalf("row %+v, want 2 issues, 2 skipped, savings 1", r)
	}
}

// partial has no forecast at one issue time.
type partial struct {
	decisions.Forecasts
	missing time.Time
}

func (p partial) Issue(ctx context.Context, z forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error) {
	if at.Equal(p.missing) {
		return forecast.Series{}, false, nil
	}
	return p.Forecasts.Issue(ctx, z, at, hours)
}

func TestRunRejectsBadConfig(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(1, 2, 3)}
	src := []decisions.Source{{Name: "x", Forecasts: perfect(obs)}}
	ok := decisions.Config{Shapes: []decisions.Shape{{Duration: time.Hour, Slack: 2 * time.Hour}}, Zones: []forecast.Zone{"DE"}, From: t0, To: t0}
	for _, tc := range []struct {
		name  string
		edit  func(*decisions.Config)
		src   []decisions.Source
		field string
	}{
		{"no shape", func(c *decisions.Config) { c.Shapes = nil }, src, "shapes"},
		{"half hour", func(c *decisions.Config) { c.Shapes[0].Duration = 30 * time.Minute }, src, "shapes"},
		{"slack under duration", func(c *decisions.Config) { c.Shapes[0].Slack = 0 }, src, "shapes"},
		{"no zone", func(c *decisions.Config) { c.Zones = nil }, src, "zones"},
		{"zone not observed", func(c *decisions.Config) { c.Zones = []forecast.Zone{"SE"} }, src, "zones"},
		{"unaligned from", func(c *decisions.Config) { c.From = t0.Add(time.Minute) }, src, "from"},
		{"to before from", func(c *decisions.Config) { c.To = t0.Add(-time.Hour) }, src, "from"},
		{"every 90m", func(c *decisions.Config) { c.Every = 90 * time.Minute }, src, "every"},
		{"redecide 30m", func(c *decisions.Config) { c.Redecide = 30 * time.Minute }, src, "redecide"},
		{"redecide gain 1", func(c *decisions.Config) { c.Redecide, c.RedecideGain = time.Hour, 1 }, src, "redecide_gain"},
		{"oracle name", func(*decisions.Config) {}, []decisions.Source{{Name: decisions.Oracle, Forecasts: perfect(obs)}}, "sources"},
		{"same name", func(*decisions.Config) {}, append(src, src...), "sources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Shapes = []decisions.Shape{ok.Shapes[0]}
			tc.edit(&c)
			_, err := decisions.Run(context.Background(), c, obs, tc.src)
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != tc.field {
				t.Fatalf("err %v, want EINVALID on %s", err, tc.field)
			}
		})
	}
}

// byIssue forecasts per issue time (hours after t0), from the issue time.
type byIssue map[int][]float64

func (b byIssue) Issue(_ context.Context, _ forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error) {
	v, ok := b[int(at.Sub(t0)/time.Hour)]
	if !ok {
		return forecast.Series{}, false, nil
	}
	return forecast.Series{Start: at, Values: v[:hours]}, true, nil
}

// Re-deciding: the forecast issued at 0 points at hour 3 (observed 6), the
// one issued at 1 at hour 1 (observed 2, the oracle's pick). Deciding once
// saves 4 of 8; re-deciding every hour while the start is ahead saves 8.
// A re-decision without a forecast keeps the pick. With a least gain, the
// move at 1 (the held hour 3 forecast at 9 then, hour 1 at 1: a gain of
// 8/9) happens under a gain of 0.5 and not under 0.95.
func TestRunRedecide(t *testing.T) {
	obs := map[forecast.Zone]forecast.Series{"DE": series(10, 2, 8, 6, 9, 9, 9)}
	src := byIssue{0: {9, 9, 9, 1, 9, 9}, 1: {1, 9, 9, 9, 9}, 2: {9, 1, 9, 9}}
	gap := byIssue{0: {9, 9, 9, 1, 9, 9}, 2: {9, 1, 9, 9}} // at 2: hour 3 still best
	for _, tc := range []struct {
		name     string
		redecide time.Duration
		gain     float64
		src      decisions.Forecasts
		want     float64
	}{
		{"once", 0, 0, src, 4},
		{"every hour", time.Hour, 0, src, 8},
		{"every 2 hours", 2 * time.Hour, 0, src, 4},
		{"no forecast at 1", time.Hour, 0, gap, 4},
		{"gain 0.5", time.Hour, 0.5, src, 8},
		{"gain 0.95", time.Hour, 0.95, src, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := decisions.Run(context.Background(), decisions.Config{
				Shapes: []decisions.Shape{shape(t, "1h/4h")}, Zones: []forecast.Zone{"DE"}, From: t0, To: t0, Redecide: tc.redecide, RedecideGain: tc.gain,
			}, obs, []decisions.Source{{Name: "x", Forecasts: tc.src}})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Rows[0]; r.Oracle.Saving != 8 || r.Sources[0].Saving != tc.want {
				t.Fatalf("oracle saves %v, source %v; want 8 and %v", r.Oracle.Saving, r.Sources[0].Saving, tc.want)
			}
		})
	}
}
