package ridge

import (
	"math"
	"testing"

	"github.com/carbongate/carbongate/models/conformal"
)

// TestDifficultySumsMatchDifficulty: the running sums the fit calibrates
// with give conformal.Difficulty of each history, which is what
// PredictInterval scales by.
func TestDifficultySumsMatchDifficulty(t *testing.T) {
	t.Parallel()
	v := make([]float64, 400)
	for i := range v {
		v[i] = 200 + 80*math.Sin(float64(i)*0.3) + 30*math.Cos(float64(i)*0.017)
	}
	v[250] = 0 // floored
	for _, L := range []int{24, 48, 168, 336} {
		c := DefaultConfig()
		c.Lookback = L
		in := series{dsum: difficultySums(v)}
		for i := L; i <= len(v); i += 7 {
			got, want := in.difficulty(&c, i), conformal.Difficulty(v[i-L:i])
			if math.Abs(got-want) > 1e-9*want {
				t.Fatalf("L=%d i=%d: running sums give %v, Difficulty %v", L, i, got, want)
			}
		}
	}
}
