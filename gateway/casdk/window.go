package casdk

import (
	"time"
)

// point is one data point as the Carbon Aware SDK sees it: a value that
// holds over [Time, Time+Duration).
type point struct {
	Time     time.Time
	Duration time.Duration
	Value    float64
}

func (p point) end() time.Time { return p.Time.Add(p.Duration) }

// hourly turns an hourly series into points.
func hourly(start time.Time, values []float64) []point {
	out := make([]point, len(values))
	for i, v := range values {
		out[i] = point{Time: start.Add(time.Duration(i) * time.Hour), Duration: time.Hour, Value: v}
	}
	return out
}

// filterByDuration keeps the points that end after start and begin at or
// before end, as the SDK scopes forecast data to dataStartAt and dataEndAt
// (a point beginning exactly at end is kept).
func filterByDuration(data []point, start, end time.Time) []point {
	var out []point
	for _, d := range data {
		if d.end().After(start) && !d.Time.After(end) {
			out = append(out, d)
		}
	}
	return out
}

// rollingAverage is the SDK's windowing of forecast data: with no window
// the points are returned as they are; otherwise windows of window start
// at max(dataStartAt, the first point) and advance by the first point's
// duration, each window the time-weighted mean of the points it overlaps.
// A window is returned only when the data reach its end; windows after the
// first one stop at the first whose end is after dataEndAt (zero: no
// bound). data must be continuous and chronological.
func rollingAverage(data []point, window time.Duration, dataStartAt, dataEndAt time.Time) []point {
	if len(data) == 0 {
		return nil
	}
	if window <= 0 {
		return data
	}
	tick := data[0].Duration
	if tick <= 0 {
		return nil
	}
	start := dataStartAt
	if start.Before(data[0].Time) {
		start = data[0].Time
	}
	var out []point
	lastEnd := data[len(data)-1].end()
	for ws := start; ; ws = ws.Add(tick) {
		we := ws.Add(window)
		if ws.After(start) && !dataEndAt.IsZero() && we.After(dataEndAt) {
			break
		}
		if we.After(lastEnd) {
			break
		}
		v, ok := averageOverPeriod(data, ws, we)
		if !ok {
			break
		}
		out = append(out, point{Time: ws, Duration: window, Value: v})
	}
	return out
}

// averageOverPeriod is the time-weighted mean of data over [start, end),
// and false when the points do not cover both ends of the period (or it
// is empty).
func averageOverPeriod(data []point, start, end time.Time) (float64, bool) {
	total := end.Sub(start)
	if total <= 0 {
		return 0, false
	}
	var sum float64
	coversStart, coversEnd := false, false
	for _, d := range data {
		de := d.end()
		if de.After(start) && d.Time.Before(end) {
			lo, hi := d.Time, de
			if start.After(lo) {
				lo = start
			}
			if end.Before(hi) {
				hi = end
			}
			sum += d.Value * float64(hi.Sub(lo)) / float64(total)
		}
		if !start.Before(d.Time) && start.Before(de) {
			coversStart = true
		}
		if !end.After(de) && end.After(d.Time) {
			coversEnd = true
		}
	}
	return sum, coversStart && coversEnd
}

// optimal returns every point with the lowest value (all tied minima, in
// order), as the SDK does; none for no data.
func optimal(data []point) []point {
	var out []point
	for _, d := range data {
		switch {
		case len(out) == 0 || d.Value < out[0].Value:
			out = append(out[:0], d)
		case d.Value == out[0].Value:
			out = append(out, d)
		}
	}
	return out
}
