package forecast

import (
	"math"
	"slices"
)

// HoursPerDay is the length of one lead day.
const HoursPerDay = 24

// MAPE returns the mean absolute percentage error of pred against actual, in
// percent. Hours whose actual value is zero (or not finite, or whose
// prediction is not finite) are skipped, since the percentage is undefined
// there; NaN is returned when no hour remains.
func MAPE(actual, pred []float64) float64 {
	return meanOf(actual, pred, func(a, p float64) (float64, bool) {
		if a == 0 {
			return 0, false
		}
		return math.Abs(a-p) / math.Abs(a) * 100, true
	})
}

// SMAPE returns the symmetric mean absolute percentage error in percent,
// 100·|a−p| / ((|a|+|p|)/2), skipping hours where both are zero.
func SMAPE(actual, pred []float64) float64 {
	return meanOf(actual, pred, func(a, p float64) (float64, bool) {
		d := (math.Abs(a) + math.Abs(p)) / 2
		if d == 0 {
			return 0, false
		}
		return math.Abs(a-p) / d * 100, true
	})
}

// MAE returns the mean absolute error.
func MAE(actual, pred []float64) float64 {
	return meanOf(actual, pred, func(a, p float64) (float64, bool) { return math.Abs(a - p), true })
}

// meanOf averages term over the common prefix of actual and pred, skipping
// non-finite pairs and pairs term rejects.
func meanOf(actual, pred []float64, term func(a, p float64) (float64, bool)) float64 {
	n := min(len(actual), len(pred))
	sum, k := 0.0, 0
	for i := range n {
		a, p := actual[i], pred[i]
		if !finite(a) || !finite(p) {
			continue
		}
		if v, ok := term(a, p); ok {
			sum += v
			k++
		}
	}
	if k == 0 {
		return math.NaN()
	}
	return sum / float64(k)
}

// ByLeadDay applies metric to each block of 24 hours of actual and pred
// (lead day 1 is hours 0–23) and returns one value per complete day.
func ByLeadDay(actual, pred []float64, metric func(actual, pred []float64) float64) []float64 {
	n := min(len(actual), len(pred)) / HoursPerDay
	out := make([]float64, n)
	for d := range n {
		lo, hi := d*HoursPerDay, (d+1)*HoursPerDay
		out[d] = metric(actual[lo:hi], pred[lo:hi])
	}
	return out
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the finite values of xs with
// linear interpolation between order statistics, or NaN when there are none.
func Quantile(xs []float64, q float64) float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if finite(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	slices.Sort(v)
	q = math.Min(1, math.Max(0, q))
	pos := q * float64(len(v)-1)
	i := int(pos)
	if i >= len(v)-1 {
		return v[len(v)-1]
	}
	f := pos - float64(i)
	return v[i] + f*(v[i+1]-v[i])
}

// Mean returns the mean of the finite values of xs, or NaN when there are none.
func Mean(xs []float64) float64 {
	sum, k := 0.0, 0
	for _, x := range xs {
		if finite(x) {
			sum += x
			k++
		}
	}
	if k == 0 {
		return math.NaN()
	}
	return sum / float64(k)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
