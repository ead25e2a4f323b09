package evaluate

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Stat summarises one metric across the scored issues: the mean, the
// median and the 90th percentile (linear interpolation, forecast.Quantile).
// NaN when nothing was scored.
type Stat struct {
	Mean, Median, P90 float64
}

func statOf(xs []float64) Stat {
	return Stat{forecast.Mean(xs), forecast.Quantile(xs, 0.5), forecast.Quantile(xs, 0.9)}
}

// Day is the score of one lead day.
type Day struct {
	N        int     // issues scored on this lead day
	MAPE     Stat    // of each issue's MAPE over the day's 24 hours, percent
	MAE      Stat    // of each issue's MAE over the day's 24 hours, in the signal's unit
	Coverage float64 // share of the day's hours with lower ≤ observed ≤ upper; NaN without intervals
	Width    float64 // mean upper − lower over those hours; NaN without intervals
}

// Result is the score of one Key.
type Result struct {
	Key
	Issues  int       // issued forecasts read
	Scored  int       // issues scored
	Skipped int       // issues not scored: an observation missing, or no complete lead day
	First   time.Time // first scored issue; zero when none
	Last    time.Time // last scored issue; zero when none
	Days    []Day     // lead days 1…LeadDays
	// Coverage and Width are over every scored hour with an interval;
	// NaN without intervals.
	Coverage, Width float64
	// ByLeadHour is the mean absolute percentage error of each lead hour
	// over the scored issues (NaN where nothing was scored).
	ByLeadHour []float64
}

// Report is the score of every key of a Set, in Set.Keys order.
type Report struct {
	LeadDays int
	Results  []Result
}

// Score scores every issue of set against obs. An issue is scored when
// every lead day its forecast covers completely (all 24 hours) is fully
// observed, and it covers at least one; partial lead days are ignored. An
// issue with a missing observation in a covered day is skipped as a whole,
// so the days of a scored issue are comparable. Observations are read once
// per (zone, signal) over the span of its issues.
func Score(ctx context.Context, set *Set, obs Observations) (*Report, error) {
	span := set.LeadDays * forecast.HoursPerDay
	type series struct{ zone, signal string }
	cache := map[series]forecast.Series{}
	keys := set.Keys()
	for _, k := range keys {
		ck := series{string(k.Zone), string(k.Signal)}
		if _, ok := cache[ck]; ok {
			continue
		}
		var from, to time.Time
		for _, k2 := range keys {
			if k2.Zone != k.Zone || k2.Signal != k.Signal {
				continue
			}
			is := set.Issues[k2]
			if len(is) == 0 {
				continue
			}
			if from.IsZero() || is[0].At.Before(from) {
				from = is[0].At
			}
			if end := is[len(is)-1].At.Add(time.Duration(span) * forecast.Hour); end.After(to) {
				to = end
			}
		}
		s, err := obs.Observed(ctx, k.Zone, k.Signal, from, to)
		if err != nil {
			return nil, err
		}
		cache[ck] = s
	}
	rep := &Report{LeadDays: set.LeadDays, Results: make([]Result, 0, len(keys))}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, scoreKey(k, set.Issues[k], cache[series{string(k.Zone), string(k.Signal)}], set.LeadDays))
	}
	return rep, nil
}

// accum gathers the per-issue values of one key.
type accum struct {
	mape, mae       [][]float64 // [day][issue]
	in, n, width    []float64   // [day] interval hours inside, with interval, summed width
	apeSum, apeN    []float64   // [lead hour]
	totIn, totN, tw float64
}

func scoreKey(k Key, issues []Issue, obs forecast.Series, days int) Result {
	span := days * forecast.HoursPerDay
	a := accum{
		mape: make([][]float64, days), mae: make([][]float64, days),
		in: make([]float64, days), n: make([]float64, days), width: make([]float64, days),
		apeSum: make([]float64, span), apeN: make([]float64, span),
	}
	r := Result{Key: k, Issues: len(issues)}
	actual := make([]float64, span)
	for _, is := range issues {
		for h := range span {
			v, ok := obs.At(is.At.Add(time.Duration(h) * forecast.Hour))
			if !ok {
				v = math.NaN()
			}
			actual[h] = v
		}
		covered, ok := coveredDays(is, actual, days)
		if !ok || len(covered) == 0 {
			r.Skipped++
			continue
		}
		r.Scored++
		if r.First.IsZero() {
			r.First = is.At
		}
		r.Last = is.At
		for _, d := range covered {
			a.addDay(d, is, actual)
		}
	}
	r.Days = make([]Day, days)
	for d := range days {
		r.Days[d] = Day{N: len(a.mape[d]), MAPE: statOf(a.mape[d]), MAE: statOf(a.mae[d]),
			Coverage: ratio(a.in[d], a.n[d]), Width: ratio(a.width[d], a.n[d])}
	}
	r.Coverage, r.Width = ratio(a.totIn, a.totN), ratio(a.tw, a.totN)
	r.ByLeadHour = make([]float64, span)
	for h := range span {
		r.ByLeadHour[h] = ratio(a.apeSum[h], a.apeN[h])
	}
	return r
}

// coveredDays returns the lead days (0-based) is covers completely, and
// false when one of them lacks an observation.
func coveredDays(is Issue, actual []float64, days int) ([]int, bool) {
	var covered []int
	for d := range days {
		lo, hi := d*forecast.HoursPerDay, (d+1)*forecast.HoursPerDay
		if !allFinite(is.Value[lo:hi]) {
			continue
		}
		if !allFinite(actual[lo:hi]) {
			return nil, false
		}
		covered = append(covered, d)
	}
	return covered, true
}

func (a *accum) addDay(d int, is Issue, actual []float64) {
	lo, hi := d*forecast.HoursPerDay, (d+1)*forecast.HoursPerDay
	a.mape[d] = append(a.mape[d], forecast.MAPE(actual[lo:hi], is.Value[lo:hi]))
	a.mae[d] = append(a.mae[d], forecast.MAE(actual[lo:hi], is.Value[lo:hi]))
	for h := lo; h < hi; h++ {
		if actual[h] != 0 {
			a.apeSum[h] += math.Abs(actual[h]-is.Value[h]) / math.Abs(actual[h]) * 100
			a.apeN[h]++
		}
		lower, upper := is.Lower[h], is.Upper[h]
		if math.IsNaN(lower) || math.IsNaN(upper) {
			continue
		}
		inside := 0.0
		if lower <= actual[h] && actual[h] <= upper {
			inside = 1
		}
		a.in[d] += inside
		a.n[d]++
		a.width[d] += upper - lower
		a.totIn += inside
		a.totN++
		a.tw += upper - lower
	}
}

func ratio(x, n float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return x / n
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
