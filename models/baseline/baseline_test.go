package baseline_test

import (
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/baseline"
)

var start = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

func TestPredict(t *testing.T) {
	t.Parallel()
	p, _ := baseline.NewPersistence("DE", forecast.SignalDirect, 4, 3)
	d, _ := baseline.NewSeasonalNaive("DE", forecast.SignalDirect, 2, 4, 5)
	tests := []struct {
		name    string
		m       models.Model
		history []float64
		want    []float64
	}{
		{"persistence holds the last hour", p, []float64{1, 2, 3, 4}, []float64{4, 4, 4}},
		{"seasonal naive repeats the last period", d, []float64{1, 2, 3, 4}, []float64{3, 4, 3, 4, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := make([]float64, tt.m.Meta().Horizon)
			if err := tt.m.Predict(tt.history, start, out); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out, tt.want) {
				t.Fatalf("Predict=%v, want %v", out, tt.want)
			}
		})
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	p, _ := baseline.NewPersistence("DE", forecast.SignalDirect, 4, 3)
	tests := []struct {
		name    string
		history []float64
		start   time.Time
		out     int
	}{
		{"short history", []float64{1, 2, 3}, start, 3},
		{"short output", []float64{1, 2, 3, 4}, start, 2},
		{"start not on the hour", []float64{1, 2, 3, 4}, start.Add(time.Minute), 3},
		{"non-finite history", []float64{1, 2, 3, posInf()}, start, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Predict(tt.history, tt.start, make([]float64, tt.out))
			if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
		})
	}
	if _, err := baseline.NewSeasonalNaive("DE", forecast.SignalDirect, 5, 4, 3); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("period > lookback: err=%v, want EINVALID", err)
	}
}

func posInf() float64 {
	x := 1e308
	return x * 10
}
