package conformal_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/conformal"
)

func TestBoundsMatchSortedOrderStatistics(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name  string
		n     int
		level float64
	}{
		{"n=1", 1, 0.8}, {"n=2", 2, 0.8}, {"n=9", 9, 0.8}, {"n=100", 100, 0.8},
		{"n=1000 ties", 1000, 0.9}, {"n=365 level 0.5", 365, 0.5}, {"n=50 level 0.1", 50, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := make([]float64, tc.n)
			for i := range v {
				v[i] = rng.NormFloat64()
				if tc.name == "n=1000 ties" {
					v[i] = math.Round(v[i] * 3)
				}
			}
			sorted := slices.Sorted(slices.Values(v))
			lo, hi, err := conformal.Bounds(slices.Clone(v), tc.level)
			if err != nil {
				t.Fatal(err)
			}
			k := int(math.Ceil(float64(tc.n+1) * (1 - (1-tc.level)/2)))
			k = min(max(k, 1), tc.n)
			if want := sorted[k-1]; hi != want {
				t.Fatalf("hi=%v, want %v (rank %d of %d)", hi, want, k, tc.n)
			}
			if want := sorted[tc.n-k]; lo != want {
				t.Fatalf("lo=%v, want %v (rank %d of %d)", lo, want, tc.n-k+1, tc.n)
			}
		})
	}
}

// TestCoverage draws exchangeable residuals and checks that the bounds
// calibrated on one half cover about level of the other.
func TestCoverage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	cal := make([]float64, 2000)
	for i := range cal {
		cal[i] = 0.1 * rng.NormFloat64()
	}
	lo, hi, err := conformal.Bounds(cal, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	fc, lower, upper := []float64{200}, []float64{0}, []float64{0}
	in := 0
	const n = 20000
	for range n {
		actual := 200 * math.Exp(0.1*rng.NormFloat64())
		conformal.Apply(fc, []float64{lo}, []float64{hi}, 1, lower, upper)
		if actual >= lower[0] && actual <= upper[0] {
			in++
		}
	}
	if got := float64(in) / n; math.Abs(got-0.8) > 0.02 {
		t.Fatalf("coverage %.3f, want 0.80 ± 0.02", got)
	}
}

func TestBoundsInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		res   []float64
		level float64
	}{
		{"level 0", []float64{1}, 0}, {"level 1", []float64{1}, 1}, {"level NaN", []float64{1}, math.NaN()},
		{"no residuals", nil, 0.8}, {"NaN residual", []float64{1, math.NaN()}, 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, _, err := conformal.Bounds(tc.res, tc.level); forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("err=%v, want EINVALID", err)
			}
		})
	}
}

func TestApplyFloorsForecast(t *testing.T) {
	t.Parallel()
	lower, upper := make([]float64, 2), make([]float64, 2)
	conformal.Apply([]float64{-5, 100}, []float64{-0.1, -0.2}, []float64{0.1, 0.3}, 1, lower, upper)
	if !(lower[0] > 0 && lower[0] < upper[0]) {
		t.Fatalf("non-positive forecast: interval [%v, %v]", lower[0], upper[0])
	}
	if math.Abs(lower[1]-100*math.Exp(-0.2)) > 1e-9 || math.Abs(upper[1]-100*math.Exp(0.3)) > 1e-9 {
		t.Fatalf("interval [%v, %v]", lower[1], upper[1])
	}
}

func TestDifficulty(t *testing.T) {
	t.Parallel()
	flat := make([]float64, 168)
	for i := range flat {
		flat[i] = 100
	}
	// Doubling every day: every 24-hour log change is log 2.
	doubling := make([]float64, 168)
	for i := range doubling {
		doubling[i] = math.Exp2(float64(i) / 24)
	}
	for _, tc := range []struct {
		name string
		h    []float64
		want float64
	}{
		{"flat history is floored", flat, conformal.MinDifficulty},
		{"doubling daily", doubling, math.Ln2},
		{"24 hours or less", flat[:24], 1},
		{"short window", doubling[:30], math.Ln2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := conformal.Difficulty(tc.h); math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("Difficulty=%v, want %v", got, tc.want)
			}
		})
	}
}
