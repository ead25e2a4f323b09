package ridge_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/ridge"
)

// TestIntervalCoverage fits on 150 days of a noisy synthetic series and
// checks the 80 % interval on the 60 days after the cut-off: its coverage
// is near nominal, and it holds the forecast. Not parallel: it counts
// allocations.
func TestIntervalCoverage(t *testing.T) {
	s := synthetic(215, 7)
	for i := range s.Values {
		// Multiplicative noise large enough for the interval to matter.
		s.Values[i] *= math.Exp(0.08 * math.Sin(float64(i)*12.9898+math.Sin(float64(i)*0.731)*43758.5453))
	}
	until := t0.Add(150 * 24 * time.Hour)
	m := fit(t, ridge.DefaultConfig(), s, until)
	b, ok := m.Serving().(models.IntervalModel)
	if !ok {
		t.Fatalf("Serving() = %T, want an interval model", m.Serving())
	}
	if got := m.Level(); got != 0.8 {
		t.Fatalf("Level()=%v, want 0.8", got)
	}
	out, lo, hi := make([]float64, 96), make([]float64, 96), make([]float64, 96)
	in, n := 0, 0
	for day := 151; day+4 <= 215; day++ {
		start := t0.Add(time.Duration(day) * 24 * time.Hour)
		hist, _ := s.Last(start, 168)
		if err := b.PredictInterval(hist, start, out, lo, hi); err != nil {
			t.Fatal(err)
		}
		actual := s.Window(start, start.Add(96*time.Hour)).Values
		for h, a := range actual {
			if !(lo[h] <= hi[h]) {
				t.Fatalf("day %d lead %d: lower %v above upper %v", day, h, lo[h], hi[h])
			}
			if a >= lo[h] && a <= hi[h] {
				in++
			}
			n++
		}
	}
	if cov := float64(in) / float64(n); cov < 0.72 || cov > 0.88 {
		t.Fatalf("coverage %.3f of the 80 %% interval, want 0.72–0.88", cov)
	}
	// The point forecast of PredictInterval is Predict's.
	start := t0.Add(160 * 24 * time.Hour)
	hist, _ := s.Last(start, 168)
	want := make([]float64, 96)
	if err := m.Predict(hist, start, want); err != nil {
		t.Fatal(err)
	}
	if err := b.PredictInterval(hist, start, out, lo, hi); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, want) {
		t.Fatal("PredictInterval's forecast differs from Predict's")
	}
	if n := testing.AllocsPerRun(50, func() { _ = b.PredictInterval(hist, start, out, lo, hi) }); n != 0 {
		t.Fatalf("PredictInterval allocates %v times, want 0", n)
	}
	if err := b.PredictInterval(hist, start, out, lo[:5], hi); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("short lower: err=%v, want EINVALID", err)
	}
}

// TestCrossValidatedLambdas: with a grid, Fit records one λ per lead day,
// each from the grid; without folds nothing is chosen and the model has
// no interval.
func TestCrossValidatedLambdas(t *testing.T) {
	t.Parallel()
	s := synthetic(120, 8)
	until := t0.Add(100 * 24 * time.Hour)
	c := ridge.DefaultConfig()
	m := fit(t, c, s, until)
	got := m.Config().LeadLambdas
	if len(got) != 4 {
		t.Fatalf("LeadLambdas=%v, want 4 values", got)
	}
	for _, l := range got {
		if !slices.Contains(c.LambdaGrid, l) {
			t.Fatalf("chosen λ %v is not in the grid %v", l, c.LambdaGrid)
		}
	}
	c.Folds, c.LambdaGrid, c.Interval = 0, nil, 0
	p := fit(t, c, s, until)
	if p.Config().LeadLambdas != nil || p.Level() != 0 {
		t.Fatalf("point model: lead lambdas %v, level %v", p.Config().LeadLambdas, p.Level())
	}
	if _, ok := p.Serving().(models.IntervalModel); ok {
		t.Fatal("a model without interval serves as an interval model")
	}
	// The same λ everywhere gives the same weights as the fixed λ.
	c.Lambda = 3e-3
	fixed := fit(t, c, s, until)
	c.LeadLambdas = []float64{3e-3, 3e-3, 3e-3, 3e-3}
	lead := fit(t, c, s, until)
	a, b := fixed.Weights(), lead.Weights()
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9*(1+math.Abs(a[i])) {
			t.Fatalf("weight %d: %v with Lambda, %v with equal LeadLambdas", i, a[i], b[i])
		}
	}
}

// TestExtraFeatures fits with the optional feature blocks and origin
// pooling and checks the model still learns the cycles.
func TestExtraFeatures(t *testing.T) {
	t.Parallel()
	s := synthetic(120, 9)
	until := t0.Add(90 * 24 * time.Hour)
	c := ridge.DefaultConfig()
	c.Profile, c.DailyMeans, c.OriginWidth = 7, 7, 1
	m := fit(t, c, s, until)
	if got, want := m.Config().NumFeatures(), 1+30+24+7+31; got != want {
		t.Fatalf("NumFeatures=%d, want %d", got, want)
	}
	out := make([]float64, 96)
	for day := 95; day < 110; day++ {
		start := t0.Add(time.Duration(day) * 24 * time.Hour)
		hist, _ := s.Last(start, 168)
		if err := m.Predict(hist, start, out); err != nil {
			t.Fatal(err)
		}
		if got := forecast.MAPE(s.Window(start, start.Add(96*time.Hour)).Values, out); got > 2 {
			t.Fatalf("day %d: MAPE=%.2f%%, want < 2%%", day, got)
		}
	}
}

func TestConfigInvalidCV(t *testing.T) {
	t.Parallel()
	def := ridge.DefaultConfig()
	meta := models.Meta{Family: ridge.FamilyZone, Lookback: def.Lookback, Horizon: def.Horizon}
	for _, tc := range []struct {
		name   string
		mutate func(c *ridge.Config)
	}{
		{"profile beyond lookback", func(c *ridge.Config) { c.Profile = 8 }},
		{"negative daily means", func(c *ridge.Config) { c.DailyMeans = -1 }},
		{"origin width with one origin", func(c *ridge.Config) { c.Origins, c.OriginWidth = 1, 1 }},
		{"one fold", func(c *ridge.Config) { c.Folds = 1 }},
		{"grid without folds", func(c *ridge.Config) { c.Folds, c.Interval = 0, 0 }},
		{"interval without folds", func(c *ridge.Config) { c.Folds, c.LambdaGrid = 0, nil }},
		{"interval level 1", func(c *ridge.Config) { c.Interval = 1 }},
		{"lead lambdas wrong length", func(c *ridge.Config) { c.LeadLambdas = []float64{1e-3} }},
		{"negative grid value", func(c *ridge.Config) { c.LambdaGrid = []float64{-1} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := def.Clone()
			tc.mutate(&c)
			if err := c.Validate(); forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("Validate: %v, want EINVALID", err)
			}
			_, err := ridge.New(meta, c, make([]float64, c.NumWeights()), models.TrainingInfo{})
			if forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("New: %v, want EINVALID", err)
			}
		})
	}
	// Crossed interval bounds are refused.
	c := def.Clone()
	w := make([]float64, c.NumWeights()+c.NumBounds())
	w[c.NumWeights()] = 1 // lower of origin 0, lead 0 above its upper (0)
	if _, err := ridge.New(meta, c, w, models.TrainingInfo{}); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("crossed bounds: %v, want EINVALID", err)
	}
}

// TestFitFoldWithoutSample: cross-validation over more blocks than the
// data fills fails with EINVALID naming the block.
func TestFitFoldWithoutSample(t *testing.T) {
	t.Parallel()
	c := ridge.DefaultConfig()
	c.Folds = 40
	_, err := ridge.Fit(context.Background(), ridge.Spec{Name: "x", Zone: "DE", Config: c}, []ridge.Input{{Zone: "DE", Series: synthetic(13, 1)}})
	if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
		t.Fatalf("code=%q (%v), want %q", got, err, want)
	}
}
