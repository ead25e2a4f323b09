package ridge_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/ridge"
)

var t0 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// synthetic returns days of an hourly series with daily and weekly cycles
// and deterministic noise.
func synthetic(days int, seed uint64) forecast.Series {
	v := make([]float64, days*24)
	x := seed
	for i := range v {
		x = x*6364136223846793005 + 1442695040888963407
		noise := float64(x>>40)/float64(1<<24) - 0.5
		v[i] = 200 + 60*math.Sin(2*math.Pi*float64(i)/24) + 20*math.Sin(2*math.Pi*float64(i)/168) + 4*noise
	}
	return forecast.Series{Start: t0, Values: v}
}

func fit(tb testing.TB, cfg ridge.Config, s forecast.Series, until time.Time) *ridge.Model {
	tb.Helper()
	m, err := ridge.Fit(context.Background(), ridge.Spec{Name: "carbon-forecaster-DE", Zone: "DE", Signal: forecast.SignalDirect, Until: until, Config: cfg},
		[]ridge.Input{{Zone: "DE", Series: s}})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestFitLearnsCycles(t *testing.T) {
	t.Parallel()
	s := synthetic(120, 1)
	until := t0.Add(90 * 24 * time.Hour)
	m := fit(t, ridge.DefaultConfig(), s, until)
	if got, want := m.Meta().Family, ridge.FamilyZone; got != want {
		t.Fatalf("family=%q, want %q", got, want)
	}
	info := m.Training()
	if !info.Until.Equal(until) || info.Samples == 0 || !slices.Equal(info.Zones, []forecast.Zone{"DE"}) {
		t.Fatalf("training info=%+v", info)
	}
	out := make([]float64, 96)
	for day := 95; day < 115; day++ {
		start := t0.Add(time.Duration(day) * 24 * time.Hour)
		hist, _ := s.Last(start, 168)
		if err := m.Predict(hist, start, out); err != nil {
			t.Fatal(err)
		}
		actual := s.Window(start, start.Add(96*time.Hour)).Values
		if got := forecast.MAPE(actual, out); got > 2 {
			t.Fatalf("day %d: MAPE=%.2f%%, want < 2%%", day, got)
		}
	}
}

func TestFitIgnoresDataAfterUntil(t *testing.T) {
	t.Parallel()
	s := synthetic(60, 2)
	until := t0.Add(40 * 24 * time.Hour)
	changed := forecast.Series{Start: s.Start, Values: slices.Clone(s.Values)}
	for i := 40 * 24; i < len(changed.Values); i++ {
		changed.Values[i] *= 3
	}
	a, b := fit(t, ridge.DefaultConfig(), s, until), fit(t, ridge.DefaultConfig(), changed, until)
	if !slices.Equal(a.Weights(), b.Weights()) {
		t.Fatal("weights changed with data after the cut-off")
	}
}

func TestPredictConcurrentAndAllocFree(t *testing.T) {
	s := synthetic(40, 3)
	m := fit(t, ridge.DefaultConfig(), s, time.Time{})
	start := t0.Add(30 * 24 * time.Hour)
	hist, _ := s.Last(start, 168)
	want := make([]float64, 96)
	if err := m.Predict(hist, start, want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			out := make([]float64, 96)
			for range 50 {
				if err := m.Predict(hist, start, out); err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(out, want) {
					t.Errorf("goroutine %d: concurrent Predict differs", g)
					return
				}
			}
		})
	}
	wg.Wait()
	out := make([]float64, 96)
	if n := testing.AllocsPerRun(100, func() { _ = m.Predict(hist, start, out) }); n != 0 {
		t.Fatalf("Predict allocates %v times, want 0", n)
	}
}

func TestConfigAndNewInvalid(t *testing.T) {
	t.Parallel()
	def := ridge.DefaultConfig()
	meta := models.Meta{Family: ridge.FamilyZone, Lookback: def.Lookback, Horizon: def.Horizon}
	tests := []struct {
		name    string
		mutate  func(c *ridge.Config)
		meta    models.Meta
		weights int
	}{
		{"lag beyond lookback", func(c *ridge.Config) { c.Lags = []int{200} }, meta, 0},
		{"no lags", func(c *ridge.Config) { c.Lags = nil }, meta, 0},
		{"unknown calendar", func(c *ridge.Config) { c.Calendar = "moon" }, meta, 0},
		{"unknown scaling", func(c *ridge.Config) { c.Scaling = "zscore" }, meta, 0},
		{"origins 7", func(c *ridge.Config) { c.Origins = 7 }, meta, 0},
		{"negative lambda", func(c *ridge.Config) { c.Lambda = -1 }, meta, 0},
		{"wrong weight count", func(c *ridge.Config) {}, meta, def.NumWeights() - 1},
		{"meta disagrees", func(c *ridge.Config) {}, models.Meta{Lookback: 24, Horizon: 96}, def.NumWeights()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := def.Clone()
			tt.mutate(&c)
			_, err := ridge.New(tt.meta, c, make([]float64, tt.weights), models.TrainingInfo{})
			if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
		})
	}
}

func TestFitNoSample(t *testing.T) {
	t.Parallel()
	_, err := ridge.Fit(context.Background(), ridge.Spec{Name: "x", Zone: "DE", Config: ridge.DefaultConfig()},
		[]ridge.Input{{Zone: "DE", Series: synthetic(5, 1)}})
	if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
		t.Fatalf("code=%q (%v), want %q", got, err, want)
	}
}

func BenchmarkPredict(b *testing.B) {
	s := synthetic(40, 4)
	m := fit(b, ridge.DefaultConfig(), s, time.Time{})
	start := t0.Add(30 * 24 * time.Hour)
	hist, _ := s.Last(start, 168)
	out := make([]float64, 96)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Predict(hist, start, out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredictInterval(b *testing.B) {
	s := synthetic(40, 4)
	m, ok := fit(b, ridge.DefaultConfig(), s, time.Time{}).Serving().(models.IntervalModel)
	if !ok {
		b.Fatal("no interval model")
	}
	start := t0.Add(30 * 24 * time.Hour)
	hist, _ := s.Last(start, 168)
	out, lo, hi := make([]float64, 96), make([]float64, 96), make([]float64, 96)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.PredictInterval(hist, start, out, lo, hi); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitZone fits one zone on a year of hourly data, as train does.
func BenchmarkFitZone(b *testing.B) {
	s := synthetic(366, 5)
	b.ReportAllocs()
	for b.Loop() {
		fit(b, ridge.DefaultConfig(), s, time.Time{})
	}
}
