package ingest

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Normalize returns the points in UTC, sorted by Time, each Time once; it
// does not modify pts. Upstreams answer out of order and repeat points (an
// inclusive end, a revision): a repeat with the same Value and Estimated is
// dropped and counted in dups; a repeat that differs is a conflict, resolved
// by keeping the latest revision (the later UpdatedAt; at equal UpdatedAt,
// the one that came later in pts).
func Normalize(pts []Point) (out []Point, dups, conflicts int) {
	type indexed struct {
		Point
		i int
	}
	all := make([]indexed, len(pts))
	for i, p := range pts {
		p.Time, p.UpdatedAt = p.Time.UTC(), p.UpdatedAt.UTC()
		all[i] = indexed{p, i}
	}
	slices.SortFunc(all, func(a, b indexed) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.i, b.i))
	})
	out = make([]Point, 0, len(all))
	for _, p := range all {
		n := len(out)
		if n == 0 || !out[n-1].Time.Equal(p.Time) {
			out = append(out, p.Point)
			continue
		}
		last := &out[n-1]
		if last.Value == p.Value && last.Estimated == p.Estimated {
			dups++
			if p.UpdatedAt.After(last.UpdatedAt) {
				last.UpdatedAt = p.UpdatedAt
			}
			continue
		}
		conflicts++
		if !p.UpdatedAt.Before(last.UpdatedAt) {
			*last = p.Point
		}
	}
	return out, dups, conflicts
}

// Hourly averages normalised points that each cover period into hourly
// points: one per hour that the points cover completely, holding the
// time-weighted mean over that hour. Point i covers [Time, Time+period),
// cut short by the next point's Time, so that overlapping points are not
// counted twice; hours with any uncovered part are left out (a partial hour
// at the end of the data is completed by a later fetch). An hour is
// Estimated when any of its points is, and its UpdatedAt is their latest.
// Points with a non-finite or negative value do not cover anything.
func Hourly(pts []Point, period time.Duration) []Point {
	if period <= 0 {
		return nil
	}
	var out []Point
	var acc struct {
		hour      time.Time
		sum       float64 // value × seconds
		covered   time.Duration
		estimated bool
		updated   time.Time
	}
	flush := func() {
		if acc.covered == forecast.Hour && !acc.hour.IsZero() {
			out = append(out, Point{Time: acc.hour, Value: acc.sum / forecast.Hour.Seconds(), Estimated: acc.estimated, UpdatedAt: acc.updated})
		}
	}
	for i, p := range pts {
		if !finite(p.Value) || p.Value < 0 {
			continue
		}
		start, end := p.Time.UTC(), p.Time.UTC().Add(period)
		if i+1 < len(pts) && pts[i+1].Time.Before(end) {
			end = pts[i+1].Time.UTC()
		}
		for start.Before(end) {
			h := start.Truncate(forecast.Hour)
			if !h.Equal(acc.hour) {
				flush()
				acc.hour, acc.sum, acc.covered, acc.estimated, acc.updated = h, 0, 0, false, time.Time{}
			}
			stop := h.Add(forecast.Hour)
			if end.Before(stop) {
				stop = end
			}
			seg := stop.Sub(start)
			acc.sum += p.Value * seg.Seconds()
			acc.covered += seg
			acc.estimated = acc.estimated || p.Estimated
			if p.UpdatedAt.After(acc.updated) {
				acc.updated = p.UpdatedAt.UTC()
			}
			start = start.Add(seg)
		}
	}
	flush()
	return out
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Clip returns, in a new slice, the points with from ≤ Time < to, and how
// many it left out.
func Clip(pts []Point, from, to time.Time) (in []Point, outside int) {
	in = make([]Point, 0, len(pts))
	for _, p := range pts {
		if p.Time.Before(from) || !p.Time.Before(to) {
			outside++
			continue
		}
		in = append(in, p)
	}
	return in, outside
}
