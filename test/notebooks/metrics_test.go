//go:build interop

package notebooks

import (
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// issueDays returns 00:00 UTC of every day from from to to (YYYY-MM-DD,
// inclusive).
func issueDays(tb testing.TB, from, to string) []time.Time {
	tb.Helper()
	a, err := time.Parse(time.DateOnly, from)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := time.Parse(time.DateOnly, to)
	if err != nil {
		tb.Fatal(err)
	}
	var days []time.Time
	for d := a; !d.After(b); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	return days
}

// naiveMAPE scores a naive forecast issued at each day (00:00 UTC) from
// the hours before it: period 0 holds the last hour flat, period p repeats
// the last p hours. It returns, per lead day, the mean over issue days of
// that day's MAPE in percent (hours observed as 0 skipped).
func naiveMAPE(tb testing.TB, y forecast.Series, days []time.Time, leadDays, period int) []float64 {
	tb.Helper()
	span := leadDays * 24
	sums := make([]float64, leadDays)
	for _, day := range days {
		hist, ok := y.Last(day, max(period, 1))
		actual := y.Window(day, day.Add(time.Duration(span)*time.Hour)).Values
		if !ok || len(actual) != span {
			tb.Fatalf("%s: the data does not cover the issue day and its %d hours", day.Format(time.DateOnly), span)
		}
		for d := range leadDays {
			sum, n := 0.0, 0
			for k := d * 24; k < (d+1)*24; k++ {
				pred := hist[len(hist)-1]
				if period > 0 {
					pred = hist[k%period]
				}
				if a := actual[k]; a != 0 {
					sum += math.Abs(a-pred) / math.Abs(a)
					n++
				}
			}
			sums[d] += sum / float64(n) * 100
		}
	}
	for d := range sums {
		sums[d] /= float64(len(days))
	}
	return sums
}

// closeTo fails when got and want differ by more than a relative 1e-9 (the
// notebook and the test add in different orders).
func closeTo(tb testing.TB, what string, got, want float64) {
	tb.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		tb.Errorf("%s = %v, want %v", what, got, want)
	}
}
