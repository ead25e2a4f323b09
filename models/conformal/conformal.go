// Package conformal turns out-of-sample forecast errors into prediction
// intervals: split-conformal bounds from empirical quantiles of log ratios
// (actual / forecast), one pair per lead hour. A bound pair (lo, hi) at
// nominal coverage level says that the hour's value falls in
// [forecast·e^lo, forecast·e^hi] with probability about level, when the
// residuals came from forecasts the model was not fitted on.
package conformal

import (
	"math"

	"github.com/carbongate/carbongate/forecast"
)

// Floor is the smallest value a log ratio reads (gCO2eq/kWh): actuals and
// forecasts below it count as Floor.
const Floor = 1e-3

// LogRatio returns log(actual / forecast), both floored at Floor.
func LogRatio(actual, fc float64) float64 {
	return math.Log(max(actual, Floor)) - math.Log(max(fc, Floor))
}

// CheckLevel returns EINVALID unless 0 < level < 1.
func CheckLevel(level float64) error {
	if !(level > 0 && level < 1) {
		return forecast.FieldErrorf(forecast.EINVALID, "interval", "interval level %v must be in (0, 1)", level)
	}
	return nil
}

// Bounds returns the equal-tailed split-conformal bounds of residuals (log
// ratios) at nominal coverage level: the ⌈(n+1)(1−α/2)⌉-th smallest value
// for hi and the mirror order statistic for lo, α = 1 − level, which is
// the finite-sample-valid choice for exchangeable residuals. EINVALID for a bad level, no residuals or a
// non-finite one; with too few residuals for the level the extreme values
// are used. It reorders residuals.
func Bounds(residuals []float64, level float64) (lo, hi float64, err error) {
	if err := CheckLevel(level); err != nil {
		return 0, 0, err
	}
	n := len(residuals)
	if n == 0 {
		return 0, 0, forecast.Errorf(forecast.EINVALID, "no residuals to calibrate an interval on")
	}
	for i, r := range residuals {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return 0, 0, forecast.Errorf(forecast.EINVALID, "residual %d is not finite", i)
		}
	}
	tail := (1 - level) / 2
	k := int(math.Ceil(float64(n+1) * (1 - tail))) // 1-based rank of hi
	k = min(max(k, 1), n)
	hi = nth(residuals, k-1)
	if n-k < k-1 {
		// The (n−k+1)-th smallest lies left of hi now.
		return nth(residuals[:k-1], n-k), hi, nil
	}
	return nth(residuals, n-k), hi, nil
}

// nth returns the k-th smallest value of v (0-based), partially
// reordering v so that v[:k] ≤ v[k] ≤ v[k+1:] (Hoare's selection).
func nth(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		// Median of three as the pivot.
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// Apply writes the interval of forecast fc with bounds lo and hi (per lead
// hour, log ratios in units of scale) into lower and upper: fc·e^(scale·lo)
// and fc·e^(scale·hi). All slices have the same length and scale > 0 (1
// for plain log ratios; see Difficulty). Forecasts below Floor are taken
// as Floor, so lower ≤ upper always and both are positive.
func Apply(fc, lo, hi []float64, scale float64, lower, upper []float64) {
	for h, v := range fc {
		v = max(v, Floor)
		lower[h] = v * math.Exp(scale*lo[h])
		upper[h] = v * math.Exp(scale*hi[h])
	}
}

// MinDifficulty floors Difficulty, so a flat history still gets an
// interval.
const MinDifficulty = 0.01

// DifficultyWindow is the most hours Difficulty averages over.
const DifficultyWindow = 144

// Difficulty measures how hard a history is to forecast, for normalised
// conformal intervals (residuals divided by it calibrate bounds that widen
// in volatile weeks and zones): the mean absolute change of the log values
// over 24 hours, |log v[i] − log v[i−24]|, over the last
// min(len(history)−24, DifficultyWindow) hours, floored at MinDifficulty.
// Values are floored at Floor first. A history of 24 hours or less gives
// 1.
func Difficulty(history []float64) float64 {
	n := len(history)
	w := min(n-24, DifficultyWindow)
	if w <= 0 {
		return 1
	}
	var s float64
	for i := n - w; i < n; i++ {
		s += math.Abs(math.Log(max(history[i], Floor) / max(history[i-24], Floor)))
	}
	return max(s/float64(w), MinDifficulty)
}
