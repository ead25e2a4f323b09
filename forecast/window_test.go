package forecast_test

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// winT0 is hour-aligned and aligned to every step of 1, 2, 4, 5, 10, 15, 20
// and 30 minutes since the Unix epoch (1704067200 s), but not to 25 minutes.
var winT0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

var winNaN = math.NaN()

func winAt(d time.Duration) time.Time { return winT0.Add(d) }

func winSeries(startHour int, vals ...float64) forecast.Series {
	return forecast.Series{Start: winAt(time.Duration(startHour) * time.Hour), Values: vals}
}

func winConst(startHour, n int, v float64) forecast.Series {
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = v
	}
	return winSeries(startHour, vals...)
}

func winRelEq(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func TestSearch(t *testing.T) {
	t.Parallel()
	const m = time.Minute
	const h = time.Hour
	type want struct {
		zone  forecast.Zone
		start time.Duration // after winT0
		mean  float64
	}
	tests := []struct {
		name       string
		q          forecast.Query
		cands      []forecast.Candidate
		best       want
		perZone    []forecast.Zone // order of PerZone, when checked
		infeasible []forecast.Zone
	}{{
		name: "partial hours at both ends",
		// Only EarliestStart fits: 45 min of 100, 60 of 200, 15 of 300.
		q:     forecast.Query{Duration: 2 * h, EarliestStart: winAt(15 * m), Deadline: winAt(2*h + 15*m), Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 100, 200, 300)}},
		best:  want{"DE", 15 * m, (45*100 + 60*200 + 15*300) / 120.0},
	}, {
		name:  "partial hours with step inside the hour",
		q:     forecast.Query{Duration: 100 * m, EarliestStart: winT0, Step: 20 * m},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 400, 100, 130, 400)}},
		// 1:00–2:40: 60 of 100, 40 of 130.
		best: want{"DE", h, (60*100 + 40*130) / 100.0},
	}, {
		name:  "window ending exactly at series end",
		q:     forecast.Query{Duration: h, EarliestStart: winT0, Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 500, 500, 100)}},
		best:  want{"DE", 2 * h, 100},
	}, {
		name:  "partial window ending exactly at series end",
		q:     forecast.Query{Duration: 90 * m, EarliestStart: winT0, Step: 30 * m},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 500, 500, 100)}},
		best:  want{"DE", 90 * m, (30*500 + 60*100) / 90.0},
	}, {
		name:  "deadline exactly at series end",
		q:     forecast.Query{Duration: h, EarliestStart: winT0, Deadline: winAt(3 * h), Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 500, 500, 100)}},
		best:  want{"DE", 2 * h, 100},
	}, {
		name:  "deadline one nanosecond before series end",
		q:     forecast.Query{Duration: h, EarliestStart: winT0, Deadline: winAt(3*h - 1), Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 500, 500, 100)}},
		best:  want{"DE", 0, 500},
	}, {
		name:  "deadline exactly at earliest start plus duration",
		q:     forecast.Query{Duration: h, EarliestStart: winAt(30 * m), Deadline: winAt(90 * m), Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 100, 300)}},
		best:  want{"DE", 30 * m, 200},
	}, {
		name:  "earliest start mid-hour is a candidate",
		q:     forecast.Query{Duration: h, EarliestStart: winAt(20 * m), Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 100, 300, 300, 300)}},
		best:  want{"DE", 20 * m, (40*100 + 20*300) / 60.0},
	}, {
		name: "earliest start mid-hour then aligned starts",
		q:    forecast.Query{Duration: h, EarliestStart: winAt(20 * m), Step: h},
		// 0:20 touches the expensive first hour; 1:00 is the next candidate.
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 900, 100, 100, 300)}},
		best:  want{"DE", h, 100},
	}, {
		name:  "earliest start before the series",
		q:     forecast.Query{Duration: h, EarliestStart: winAt(-50 * m), Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 100, 300)}},
		best:  want{"DE", 0, 100},
	}, {
		name: "earliest start mid-hour before the series, unaligned step",
		q:    forecast.Query{Duration: h, EarliestStart: winAt(-50 * m), Step: 25 * m},
		// Multiples of 25 min after winT0: 0:05, 0:30, 0:55, …
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 100, 300)}},
		best:  want{"DE", 5 * m, (55*100 + 5*300) / 60.0},
	}, {
		name: "step not dividing the hour",
		q:    forecast.Query{Duration: h, EarliestStart: winT0, Step: 25 * m},
		// Candidates 0:00, 0:05, 0:30, 0:55, 1:20, 1:45, 2:10, 2:35, 3:00;
		// the first that lies inside hours 2–3 is 2:10.
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 900, 900, 100, 100, 900, 900)}},
		best:  want{"DE", 2*h + 10*m, 100},
	}, {
		name: "duration not a multiple of step",
		q:    forecast.Query{Duration: 50 * m, EarliestStart: winT0, Step: 20 * m},
		// Last candidate is 2:00 (ends 2:50); 2:20 would end past the series.
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 300, 300, 100)}},
		best:  want{"DE", 2 * h, 100},
	}, {
		name: "duration of a few nanoseconds",
		q:    forecast.Query{Duration: 7, EarliestStart: winAt(59*m + 59*time.Second), Step: time.Second},
		// 0:59:59 + 7 ns stays in hour 0; 1:00:00 is in hour 1.
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 300, 100)}},
		best:  want{"DE", h, 100},
	}, {
		name: "ties across zones: lower zone id wins",
		q:    forecast.Query{Duration: 2 * h, EarliestStart: winT0, Step: h},
		cands: []forecast.Candidate{
			{Zone: "SE", Series: winSeries(0, 0.3, 0.1, 0.7, 0.1)},
			{Zone: "DE", Series: winSeries(0, 0.3, 0.1, 0.7, 0.1)},
		},
		best:    want{"DE", 0, 0.2},
		perZone: []forecast.Zone{"DE", "SE"},
	}, {
		name: "ties across zones with different prefix sums",
		q:    forecast.Query{Duration: 90 * m, EarliestStart: winAt(2 * h), Step: 10 * m},
		// SE starts earlier with values that make its prefix sums round
		// differently; over the same hours the means are equal.
		cands: []forecast.Candidate{
			{Zone: "SE", Series: winSeries(-3, 123.456, 0.7, 1e3/3, 0.1, 0.2, 0.3, 0.1, 0.2)},
			{Zone: "PL", Series: winSeries(0, 0.1, 0.2, 0.3, 0.1, 0.2)},
			{Zone: "ES", Series: winSeries(0, 9, 9, 0.3, 0.1, 0.2)},
		},
		best:    want{"ES", 3 * h, (60*0.1 + 30*0.2) / 90.0},
		perZone: []forecast.Zone{"ES", "PL", "SE"},
	}, {
		name: "ties across starts: earliest start wins",
		q:    forecast.Query{Duration: 3*h + 17*m, EarliestStart: winAt(7 * m), Step: 5 * m},
		// A constant 0.1 gives means that differ by rounding only.
		cands: []forecast.Candidate{{Zone: "DE", Series: winConst(0, 48, 0.1)}},
		best:  want{"DE", 7 * m, 0.1},
	}, {
		name: "mean drifting down by less than the tolerance",
		// Means 1, 1−0.3e-9, 1−0.6e-9, 1−0.9e-9, 1−1.2e-9: the earliest
		// within 1e-9 of the lowest is 0:30, neither the first nor the lowest.
		q:     forecast.Query{Duration: time.Hour, EarliestStart: winT0, Step: 30 * m},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 1, 1-0.6e-9, 1-1.2e-9)}},
		best:  want{"DE", 30 * m, 1 - 0.3e-9},
	}, {
		name:  "mean drifting down across a NaN hour",
		q:     forecast.Query{Duration: time.Hour, EarliestStart: winT0, Step: h},
		cands: []forecast.Candidate{{Zone: "DE", Series: winSeries(0, 1, winNaN, 1-0.5e-9, 1-1.2e-9)}},
		best:  want{"DE", 2 * h, 1 - 0.5e-9},
	}, {
		name: "earlier start beats lower zone id",
		q:    forecast.Query{Duration: h, EarliestStart: winT0, Step: h},
		cands: []forecast.Candidate{
			{Zone: "AA", Series: winSeries(0, 200, 100, 100)},
			{Zone: "ZZ", Series: winSeries(0, 100, 200, 200)},
		},
		best:    want{"ZZ", 0, 100},
		perZone: []forecast.Zone{"ZZ", "AA"},
	}, {
		name: "NaN gaps: windows touching them are skipped",
		q:    forecast.Query{Duration: 90 * m, EarliestStart: winT0, Step: 30 * m},
		cands: []forecast.Candidate{
			{Zone: "DE", Series: winSeries(0, winNaN, 100, 100, winNaN, 50, 50)},
			{Zone: "PL", Series: winSeries(0, winNaN, winNaN, winNaN)},
			{Zone: "SE", Series: winSeries(0, 10, winNaN, 10, winNaN, 10)},
		},
		best:       want{"DE", 4 * h, 50},
		perZone:    []forecast.Zone{"DE"},
		infeasible: []forecast.Zone{"PL", "SE"},
	}, {
		name: "NaN hour next to a window that does not overlap it",
		q:    forecast.Query{Duration: h, EarliestStart: winT0, Step: h},
		cands: []forecast.Candidate{
			{Zone: "DE", Series: winSeries(0, winNaN, 80, winNaN)},
			{Zone: "SE", Series: winSeries(0, math.Inf(1), 90, 70, math.Inf(-1))},
		},
		best:    want{"SE", 2 * h, 70},
		perZone: []forecast.Zone{"SE", "DE"},
	}, {
		name: "NaN gap: lowest mean before the gap ties with later",
		q:    forecast.Query{Duration: h, EarliestStart: winT0, Step: 30 * m},
		cands: []forecast.Candidate{
			{Zone: "DE", Series: winSeries(0, 0.1, 0.1, winNaN, 0.1, 0.1)},
		},
		best: want{"DE", 0, 0.1},
	}, {
		name: "zones without data or too short are infeasible, others work",
		q:    forecast.Query{Duration: 2 * h, EarliestStart: winT0, Step: h},
		cands: []forecast.Candidate{
			{Zone: "DE", Series: winSeries(0)},
			{Zone: "SE", Series: winSeries(0, 1)},
			{Zone: "PL", Series: winSeries(0, 3, 2, 1)},
			{Zone: "ES", Series: winSeries(-10, 1, 1, 1)},
		},
		best:       want{"PL", h, 1.5},
		infeasible: []forecast.Zone{"DE", "ES", "SE"},
	}, {
		name: "series not hour-aligned",
		q:    forecast.Query{Duration: h, EarliestStart: winT0, Step: 15 * m},
		cands: []forecast.Candidate{
			{Zone: "DE", Series: forecast.Series{Start: winAt(20 * m), Values: []float64{100, 40, 100}}},
			{Zone: "SE", Series: winSeries(0, 100, 50, 100)},
		},
		// DE's cheap hour is [1:20, 2:20); no start on the 15-minute grid
		// lies inside it: 1:15 has 5 min of 100, 1:30 has 10.
		best:    want{"DE", 75 * m, (5*100 + 55*40) / 60.0},
		perZone: []forecast.Zone{"DE", "SE"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := forecast.Search(tt.q, tt.cands)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			b := res.Best
			if b.Zone != tt.best.zone || !b.Start.Equal(winAt(tt.best.start)) || !winRelEq(b.Mean, tt.best.mean) {
				t.Fatalf("Best=%s %s mean %v, want %s %s mean %v", b.Zone, b.Start.Sub(winT0), b.Mean,
					tt.best.zone, tt.best.start, tt.best.mean)
			}
			if got, want := b.End, b.Start.Add(tt.q.Duration); !got.Equal(want) {
				t.Fatalf("End=%v, want %v", got, want)
			}
			if b.Start.Location() != time.UTC {
				t.Fatalf("Best.Start in %v, want UTC", b.Start.Location())
			}
			if !reflect.DeepEqual(res.PerZone[0], res.Best) {
				t.Fatalf("PerZone[0]=%+v, want Best %+v", res.PerZone[0], res.Best)
			}
			if tt.perZone != nil {
				if got := winZones(res.PerZone); !slices.Equal(got, tt.perZone) {
					t.Fatalf("PerZone zones=%v, want %v", got, tt.perZone)
				}
			}
			var inf []forecast.Zone
			for _, r := range res.Infeasible {
				inf = append(inf, r.Zone)
				if r.Reason == "" {
					t.Errorf("zone %s: empty reason", r.Zone)
				}
			}
			if !slices.Equal(inf, tt.infeasible) {
				t.Fatalf("Infeasible=%v, want %v", res.Infeasible, tt.infeasible)
			}
			// Every window agrees with MeanOver.
			for _, w := range res.PerZone {
				for _, c := range tt.cands {
					if c.Zone != w.Zone {
						continue
					}
					m, err := forecast.MeanOver(c.Series, w.Start, tt.q.Duration)
					if err != nil || !winRelEq(m, w.Mean) {
						t.Fatalf("zone %s: MeanOver=%v, %v, want %v", w.Zone, m, err, w.Mean)
					}
				}
			}
		})
	}
}

func TestSearchNaNReason(t *testing.T) {
	t.Parallel()
	res, err := forecast.Search(forecast.Query{Duration: time.Hour, EarliestStart: winT0, Step: time.Hour},
		[]forecast.Candidate{
			{Zone: "DE", Series: winSeries(0, 1, 2)},
			{Zone: "PL", Series: winSeries(0, winNaN, winNaN)},
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Infeasible) != 1 || !strings.Contains(res.Infeasible[0].Reason, "NaN") {
		t.Fatalf("Infeasible=%+v, want PL with a reason naming NaN", res.Infeasible)
	}
}

func TestSearchErrors(t *testing.T) {
	t.Parallel()
	const h = time.Hour
	ok := []forecast.Candidate{{Zone: "DE", Series: winConst(0, 24, 100)}}
	q := forecast.Query{Duration: h, EarliestStart: winT0, Step: h}
	with := func(f func(*forecast.Query)) forecast.Query { q := q; f(&q); return q }
	tests := []struct {
		name     string
		q        forecast.Query
		cands    []forecast.Candidate
		code     string
		field    string
		contains []string
	}{
		{"zero duration", with(func(q *forecast.Query) { q.Duration = 0 }), ok, forecast.EINVALID, "duration", nil},
		{"negative duration", with(func(q *forecast.Query) { q.Duration = -h }), ok, forecast.EINVALID, "duration", nil},
		{"zero step", with(func(q *forecast.Query) { q.Step = 0 }), ok, forecast.EINVALID, "step", nil},
		{"negative step", with(func(q *forecast.Query) { q.Step = -time.Minute }), ok, forecast.EINVALID, "step", nil},
		{"no candidates", q, nil, forecast.EINVALID, "zones", nil},
		{"duplicate zones", q, []forecast.Candidate{ok[0], {Zone: "SE", Series: ok[0].Series}, ok[0]},
			forecast.EINVALID, "zones", []string{"DE"}},
		{"empty zone id", q, []forecast.Candidate{{Series: ok[0].Series}}, forecast.EINVALID, "zones", nil},
		{"step too small", with(func(q *forecast.Query) { q.Step = time.Millisecond }), ok,
			forecast.EINVALID, "step", []string{"candidate starts"}},
		{"deadline before earliest start + duration",
			with(func(q *forecast.Query) { q.Deadline = winAt(h - 1) }), ok,
			forecast.EINFEASIBLE, "deadline", []string{"2024-01-01T00:59:59.999999999Z", "2024-01-01T00:00:00Z", "1h0m0s"}},
		{"deadline before earliest start",
			with(func(q *forecast.Query) { q.Deadline = winAt(-h) }), ok,
			forecast.EINFEASIBLE, "deadline", nil},
		{"duration longer than every forecast",
			with(func(q *forecast.Query) { q.Duration = 25 * h }),
			[]forecast.Candidate{ok[0], {Zone: "SE", Series: winConst(0, 10, 1)}},
			forecast.EINFEASIBLE, "duration", []string{"25h0m0s", "24h0m0s"}},
		{"no zone has a feasible window",
			with(func(q *forecast.Query) { q.EarliestStart = winAt(23*h + time.Minute) }),
			[]forecast.Candidate{ok[0], {Zone: "SE", Series: winSeries(0, winNaN, winNaN)}, {Zone: "PL"}},
			forecast.EINFEASIBLE, "zones", []string{"DE:", "SE:", "PL: no forecast data"}},
		{"no zone: only NaN",
			q, []forecast.Candidate{{Zone: "SE", Series: winSeries(0, winNaN, winNaN)}},
			forecast.EINFEASIBLE, "zones", []string{"SE:", "NaN"}},
		{"no zone: deadline before the data",
			with(func(q *forecast.Query) { q.EarliestStart = winAt(-10 * h); q.Deadline = winAt(-h) }), ok,
			forecast.EINFEASIBLE, "zones", []string{"deadline"}},
		{"no zone: step misses every fitting start",
			with(func(q *forecast.Query) { q.EarliestStart = winAt(time.Minute); q.Step = 24 * h }),
			[]forecast.Candidate{{Zone: "DE", Series: winConst(0, 1, 100)}},
			forecast.EINFEASIBLE, "zones", []string{"DE:"}},
		{"no zone: step misses every start, long series",
			with(func(q *forecast.Query) {
				q.EarliestStart = winAt(-time.Minute)
				q.Step = 48 * h
				q.Duration = 22 * h
			}), ok,
			forecast.EINFEASIBLE, "zones", []string{"no candidate start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := forecast.Search(tt.q, tt.cands)
			var fe *forecast.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err=%v (%T), want *forecast.Error", err, err)
			}
			if fe.Code != tt.code || fe.Field != tt.field {
				t.Fatalf("err=%v: code %q field %q, want %q %q", err, fe.Code, fe.Field, tt.code, tt.field)
			}
			for _, s := range tt.contains {
				if !strings.Contains(fe.Message, s) {
					t.Errorf("message %q does not contain %q", fe.Message, s)
				}
			}
			if len(res.PerZone) != 0 {
				t.Fatalf("PerZone=%v on error", res.PerZone)
			}
			if tt.field == "zones" && tt.code == forecast.EINFEASIBLE && len(res.Infeasible) != len(tt.cands) {
				t.Fatalf("Infeasible=%v, want every zone", res.Infeasible)
			}
		})
	}
}

func TestSearchManyInfeasibleMessage(t *testing.T) {
	t.Parallel()
	var cands []forecast.Candidate
	for _, z := range []forecast.Zone{"A", "B", "C", "D", "E", "F", "G"} {
		cands = append(cands, forecast.Candidate{Zone: z, Series: winSeries(0, winNaN)})
	}
	_, err := forecast.Search(forecast.Query{Duration: time.Hour, EarliestStart: winT0, Step: time.Hour}, cands)
	if msg := forecast.ErrorMessage(err); !strings.Contains(msg, "and 2 more zones") {
		t.Fatalf("message %q does not say how many zones it left out", msg)
	}
}

func TestSearchDoesNotModifyCandidates(t *testing.T) {
	t.Parallel()
	cands := []forecast.Candidate{
		{Zone: "SE", Series: winSeries(0, 1, winNaN, 3)},
		{Zone: "DE", Series: winSeries(0, 3, 2, 1)},
	}
	keep := []forecast.Candidate{
		{Zone: "SE", Series: winSeries(0, 1, winNaN, 3)},
		{Zone: "DE", Series: winSeries(0, 3, 2, 1)},
	}
	if _, err := forecast.Search(forecast.Query{Duration: time.Hour, EarliestStart: winT0, Step: time.Hour}, cands); err != nil {
		t.Fatal(err)
	}
	for i := range cands {
		if cands[i].Zone != keep[i].Zone || !slices.EqualFunc(cands[i].Series.Values, keep[i].Series.Values,
			func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
			t.Fatalf("cands[%d]=%v, want %v", i, cands[i], keep[i])
		}
	}
}

func TestSearchFarTimes(t *testing.T) {
	t.Parallel()
	// Times whose Unix nanoseconds overflow int64 still align exactly.
	for _, year := range []int{1, 1500, 2500, 9000} {
		start := time.Date(year, 3, 1, 0, 0, 0, 0, time.UTC)
		s := forecast.Series{Start: start, Values: []float64{5, 4, 3, 2, 1, 9}}
		q := forecast.Query{Duration: time.Hour, EarliestStart: start.Add(-time.Hour), Step: 20 * time.Minute}
		res, err := forecast.Search(q, []forecast.Candidate{{Zone: "DE", Series: s}})
		if err != nil {
			t.Fatalf("year %d: %v", year, err)
		}
		if got, want := res.Best.Start, start.Add(4*time.Hour); !got.Equal(want) {
			t.Fatalf("year %d: Best.Start=%v, want %v", year, got, want)
		}
	}
	// Same with an unaligned earliest start: the next candidate is the next
	// multiple of 7 minutes since the epoch.
	start := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	q := forecast.Query{Duration: time.Minute, EarliestStart: start, Step: 7 * time.Minute}
	res, err := forecast.Search(q, []forecast.Candidate{{Zone: "DE", Series: forecast.Series{Start: start, Values: []float64{5, 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Best.Start; got.Sub(start) < time.Hour || got.Sub(start) >= time.Hour+7*time.Minute ||
		winEpochRem(got, 7*time.Minute) != 0 {
		t.Fatalf("Best.Start=%v, want the first multiple of 7 min since the epoch in hour 1", got)
	}
}

func TestSearchSeriesCenturiesLong(t *testing.T) {
	t.Parallel()
	// 300 years of hours: longer than a time.Duration spans, so Series.End
	// is wrong; Search reports it rather than mishandles it.
	n := 300 * 366 * 24
	vals := make([]float64, n)
	cands := []forecast.Candidate{
		{Zone: "DE", Series: forecast.Series{Start: time.Date(1724, 1, 1, 0, 0, 0, 0, time.UTC), Values: vals}},
		{Zone: "SE", Series: winConst(0, 48, 5)},
	}
	res, err := forecast.Search(forecast.Query{Duration: time.Hour, EarliestStart: winT0, Step: time.Hour}, cands)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best.Zone != "SE" || len(res.Infeasible) != 1 || !strings.Contains(res.Infeasible[0].Reason, "time.Duration") {
		t.Fatalf("Best %v, Infeasible %v: want SE, and DE reported", res.Best, res.Infeasible)
	}
}

// winEpochRem computes t mod step since the epoch with big steps of whole
// days, independently of the package's arithmetic.
func winEpochRem(t time.Time, step time.Duration) time.Duration {
	epoch := time.Unix(0, 0).UTC()
	// Move t near the epoch by whole multiples of step.
	jump := step * (200 * 365 * 24 * time.Hour / step)
	for t.Sub(epoch) > jump || epoch.Sub(t) > jump {
		if t.After(epoch) {
			t = t.Add(-jump)
		} else {
			t = t.Add(jump)
		}
	}
	r := t.Sub(epoch) % step
	if r < 0 {
		r += step
	}
	return r
}

func TestMeanOver(t *testing.T) {
	t.Parallel()
	const m = time.Minute
	s := winSeries(0, 100, 200, winNaN, 400)
	tests := []struct {
		name  string
		start time.Duration
		d     time.Duration
		mean  float64
		code  string
		field string
	}{
		{"whole hour", 0, time.Hour, 100, "", ""},
		{"partial at both ends", 30 * m, time.Hour, 150, "", ""},
		{"inside one hour", 10 * m, m, 100, "", ""},
		{"ends where the NaN hour begins", 0, 2 * time.Hour, 150, "", ""},
		{"starts where the NaN hour ends", 3 * time.Hour, time.Hour, 400, "", ""},
		{"touches NaN", 90 * m, time.Hour, 0, forecast.EINFEASIBLE, "earliest_start"},
		{"before series", -1, time.Hour, 0, forecast.EINFEASIBLE, "earliest_start"},
		{"past series end", 3 * time.Hour, time.Hour + 1, 0, forecast.EINFEASIBLE, "duration"},
		{"zero duration", 0, 0, 0, forecast.EINVALID, "duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := forecast.MeanOver(s, winAt(tt.start), tt.d)
			if tt.code != "" {
				if forecast.ErrorCode(err) != tt.code || forecast.ErrorField(err) != tt.field {
					t.Fatalf("err=%v, want %s %s", err, tt.code, tt.field)
				}
				return
			}
			if err != nil || !winRelEq(got, tt.mean) {
				t.Fatalf("MeanOver=%v, %v, want %v", got, err, tt.mean)
			}
		})
	}
}

func winZones(ws []forecast.Window) []forecast.Zone {
	var zs []forecast.Zone
	for _, w := range ws {
		zs = append(zs, w.Zone)
	}
	return zs
}
