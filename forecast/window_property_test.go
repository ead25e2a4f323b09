package forecast_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// winRefWindow is a window found by the brute-force reference.
type winRefWindow struct {
	zone  forecast.Zone
	start time.Time
	mean  float64
}

// winRefStarts lists the candidate starts of q up to last: EarliestStart,
// then every multiple of Step since the Unix epoch after it, found by
// stepping through Unix nanoseconds (the test's times are near 2024).
func winRefStarts(q forecast.Query, last time.Time) []time.Time {
	var out []time.Time
	e := q.EarliestStart.UnixNano()
	step := int64(q.Step)
	next := (e/step + 1) * step // e > 0
	for t := e; t <= last.UnixNano(); {
		out = append(out, time.Unix(0, t).UTC())
		t = next
		next += step
	}
	return out
}

// winRefMean returns the time-weighted mean of s over [start, start+d) by
// summing the overlap of every hour of s with the window, or false when the
// window is not inside s or overlaps a hour that is not finite.
func winRefMean(s forecast.Series, start time.Time, d time.Duration) (float64, bool) {
	end := start.Add(d)
	if start.Before(s.Start) || end.After(s.End()) {
		return 0, false
	}
	sum := 0.0
	for i, v := range s.Values {
		hs := s.Start.Add(time.Duration(i) * time.Hour)
		he := hs.Add(time.Hour)
		lo, hi := hs, he
		if start.After(lo) {
			lo = start
		}
		if end.Before(hi) {
			hi = end
		}
		ov := hi.Sub(lo)
		if ov <= 0 {
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		sum += v * float64(ov)
	}
	return sum / float64(d), true
}

// winRefTied reports whether a and b are equal within the documented
// relative tolerance.
func winRefTied(a, b float64) bool {
	return math.Abs(a-b) <= forecast.TieTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// winRefSearch is the brute-force reference of forecast.Search: every
// candidate start of every zone, means from explicit hour overlaps; per zone
// the earliest start tied with the zone's lowest mean; zones ordered by
// repeatedly taking the group tied with the lowest remaining mean, ordered by
// start then zone id. perZone is empty when no zone has a feasible window.
func winRefSearch(q forecast.Query, cands []forecast.Candidate) (perZone []winRefWindow, infeasible []forecast.Zone) {
	last := time.Time{}
	for _, c := range cands {
		if end := c.Series.End(); end.After(last) {
			last = end
		}
	}
	if !q.Deadline.IsZero() && q.Deadline.Before(last) {
		last = q.Deadline
	}
	starts := winRefStarts(q, last.Add(-q.Duration))
	for _, c := range cands {
		var ws []winRefWindow
		for _, s := range starts {
			if !q.Deadline.IsZero() && s.Add(q.Duration).After(q.Deadline) {
				continue
			}
			if m, ok := winRefMean(c.Series, s, q.Duration); ok {
				ws = append(ws, winRefWindow{c.Zone, s, m})
			}
		}
		if len(ws) == 0 {
			infeasible = append(infeasible, c.Zone)
			continue
		}
		lowest := ws[0].mean
		for _, w := range ws {
			lowest = math.Min(lowest, w.mean)
		}
		for _, w := range ws { // ws is in start order
			if winRefTied(w.mean, lowest) {
				perZone = append(perZone, w)
				break
			}
		}
	}
	slices.Sort(infeasible)
	var ordered []winRefWindow
	for len(perZone) > 0 {
		lowest := perZone[0].mean
		for _, w := range perZone {
			lowest = math.Min(lowest, w.mean)
		}
		var group, rest []winRefWindow
		for _, w := range perZone {
			if winRefTied(w.mean, lowest) {
				group = append(group, w)
			} else {
				rest = append(rest, w)
			}
		}
		slices.SortFunc(group, func(a, b winRefWindow) int {
			if c := a.start.Compare(b.start); c != 0 {
				return c
			}
			return strings.Compare(string(a.zone), string(b.zone))
		})
		ordered = append(ordered, group...)
		perZone = rest
	}
	return ordered, infeasible
}

// winRandCase draws a random query and candidates around a random time in
// 2024. Values are small integers (many exact ties), constants, tenths (some
// negative), or real numbers, with missing hours in some cases.
func winRandCase(r *rand.Rand) (forecast.Query, []forecast.Candidate) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(365*24)) * time.Hour)
	steps := []time.Duration{time.Minute * 5, 7 * time.Minute, 10 * time.Minute, 15 * time.Minute, 25 * time.Minute,
		30 * time.Minute, time.Hour, 90 * time.Minute, 2 * time.Hour, 5 * time.Hour}
	var step time.Duration
	switch r.IntN(4) {
	case 0:
		step = time.Duration(60+r.IntN(3*3600)) * time.Second
	case 1:
		step = time.Duration(1e11 + r.Int64N(4e12)) // arbitrary nanoseconds
	default:
		step = steps[r.IntN(len(steps))]
	}
	var d time.Duration
	switch r.IntN(5) {
	case 0:
		d = time.Duration(1+r.IntN(12)) * time.Hour
	case 1:
		d = time.Duration(1+r.IntN(8)) * step
	case 2:
		d = time.Duration(1+r.IntN(900)) * time.Minute
	case 3:
		d = time.Duration(1 + r.Int64N(int64(14*time.Hour))) // arbitrary nanoseconds
	default:
		d = time.Duration(1+r.IntN(3600)) * time.Second
	}
	var e time.Time
	switch r.IntN(3) {
	case 0: // aligned to step
		e = base.Add(-20 * time.Hour).Truncate(step).Add(time.Duration(r.IntN(int(40*time.Hour/step)+1)) * step)
	case 1:
		e = base.Add(time.Duration(r.IntN(40)-10) * time.Hour)
	default:
		e = base.Add(time.Duration(r.Int64N(int64(40*time.Hour))) - 10*time.Hour)
	}
	q := forecast.Query{Duration: d, EarliestStart: e, Step: step}
	if r.IntN(2) == 0 {
		q.Deadline = e.Add(d + time.Duration(r.Int64N(int64(50*time.Hour))) - 3*time.Hour)
	}
	pool := []forecast.Zone{"DE", "SE", "PL", "ES", "FR", "US-CAL-CISO", "US-MIDA-PJM", "A", "B"}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	cands := make([]forecast.Candidate, 1+r.IntN(6))
	kind := r.IntN(5)
	nanRate := 0.0
	if r.IntN(3) == 0 {
		nanRate = 0.03 + 0.2*r.Float64()
	}
	for i := range cands {
		start := base.Add(time.Duration(r.IntN(12)-6) * time.Hour)
		if r.IntN(10) == 0 {
			start = start.Add(time.Duration(r.IntN(3600)) * time.Second) // not hour-aligned
		}
		n := r.IntN(72)
		if r.IntN(20) == 0 {
			n = 0
		}
		vals := make([]float64, n)
		c := 50 + 500*r.Float64()
		for h := range vals {
			switch kind {
			case 0:
				vals[h] = float64(r.IntN(4))
			case 1:
				vals[h] = c
			case 2:
				vals[h] = float64(r.IntN(3)) / 10 // 0.1, 0.2: rounding in prefix sums
			case 3:
				// Negative values follow the same rules; with mixed signs a
				// mean near zero would carry more than the relative
				// tolerance of rounding, so they are all ≤ 0.
				vals[h] = -float64(r.IntN(5)) / 10
			default:
				vals[h] = 20 + 800*r.Float64()
			}
			if r.Float64() < nanRate {
				vals[h] = math.NaN()
			}
		}
		cands[i] = forecast.Candidate{Zone: pool[i], Series: forecast.Series{Start: start, Values: vals}}
	}
	return q, cands
}

func TestSearchMatchesBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 1))
	cases := 4000
	if testing.Short() {
		cases = 500
	}
	var feasible, tiedZones int
	for i := range cases {
		q, cands := winRandCase(r)
		desc := func() string { return fmt.Sprintf("case %d: query %+v\ncands %v", i, q, cands) }
		res, err := forecast.Search(q, cands)
		want, wantInf := winRefSearch(q, cands)
		if len(want) == 0 {
			if forecast.ErrorCode(err) != forecast.EINFEASIBLE {
				t.Fatalf("%s\nerr=%v, want EINFEASIBLE (reference finds no window)", desc(), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s\nSearch: %v", desc(), err)
		}
		feasible++
		if len(want) > 1 && winRefTied(want[0].mean, want[1].mean) {
			tiedZones++
		}
		if len(res.PerZone) != len(want) {
			t.Fatalf("%s\nPerZone=%v, want %v", desc(), res.PerZone, want)
		}
		for j, w := range want {
			g := res.PerZone[j]
			if g.Zone != w.zone || !g.Start.Equal(w.start) || !winRefTied(g.Mean, w.mean) ||
				!g.End.Equal(w.start.Add(q.Duration)) {
				t.Fatalf("%s\nPerZone[%d]=%s %v %v, want %s %v %v", desc(), j, g.Zone, g.Start, g.Mean, w.zone, w.start, w.mean)
			}
		}
		if !reflect.DeepEqual(res.Best, res.PerZone[0]) {
			t.Fatalf("%s\nBest=%v, want PerZone[0] %v", desc(), res.Best, res.PerZone[0])
		}
		var inf []forecast.Zone
		for _, z := range res.Infeasible {
			inf = append(inf, z.Zone)
		}
		if !slices.Equal(inf, wantInf) {
			t.Fatalf("%s\nInfeasible=%v, want %v", desc(), res.Infeasible, wantInf)
		}
		// The order of the candidates does not matter.
		rev := slices.Clone(cands)
		slices.Reverse(rev)
		if res2, err := forecast.Search(q, rev); err != nil || !reflect.DeepEqual(res2, res) {
			t.Fatalf("%s\nreversed candidates: %+v, %v, want %+v", desc(), res2, err, res)
		}
	}
	// The generator must exercise what it is meant to.
	if feasible < cases/3 || tiedZones < cases/50 {
		t.Fatalf("only %d feasible cases and %d with tied zones of %d", feasible, tiedZones, cases)
	}
	t.Logf("%d cases, %d feasible, %d with zones tied for best", cases, feasible, tiedZones)
}
