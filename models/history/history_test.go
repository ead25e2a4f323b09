package history_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/models/history"
)

var t0 = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

func TestLast(t *testing.T) {
	t.Parallel()
	h := history.New(map[forecast.Zone]*dataset.Table{
		"DE": {Zone: "DE", Start: t0, Direct: []float64{1, 2, 3, 4}, Lifecycle: []float64{10, 20, 30, 40}},
	})
	tests := []struct {
		name   string
		zone   forecast.Zone
		signal forecast.Signal
		end    time.Time
		n      int
		want   []float64
		code   string
	}{
		{"direct", "DE", forecast.SignalDirect, t0.Add(3 * time.Hour), 2, []float64{2, 3}, ""},
		{"lifecycle to the end", "DE", forecast.SignalLifecycle, t0.Add(4 * time.Hour), 4, []float64{10, 20, 30, 40}, ""},
		{"unknown zone", "SE", forecast.SignalDirect, t0.Add(3 * time.Hour), 2, nil, forecast.ENOTFOUND},
		{"before the data", "DE", forecast.SignalDirect, t0.Add(time.Hour), 2, nil, forecast.EUNAVAILABLE},
		{"after the data", "DE", forecast.SignalDirect, t0.Add(5 * time.Hour), 2, nil, forecast.EUNAVAILABLE},
		{"off the hour", "DE", forecast.SignalDirect, t0.Add(90 * time.Minute), 1, nil, forecast.EINVALID},
		{"bad signal", "DE", "marginal", t0.Add(3 * time.Hour), 1, nil, forecast.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := h.Last(context.Background(), tt.zone, tt.signal, tt.end, tt.n)
			if c := forecast.ErrorCode(err); c != tt.code {
				t.Fatalf("code=%q (%v), want %q", c, err, tt.code)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Last=%v, want %v", got, tt.want)
			}
		})
	}
	if got := h.Zones(); !slices.Equal(got, []forecast.Zone{"DE"}) {
		t.Fatalf("Zones=%v", got)
	}
}

func TestObserved(t *testing.T) {
	t.Parallel()
	h := history.New(map[forecast.Zone]*dataset.Table{
		"DE": {Zone: "DE", Start: t0, Direct: []float64{1, 2, 3, 4}, Lifecycle: []float64{10, 20, 30, 40}},
	})
	ctx := context.Background()
	// One hour before the table, its last two, one after: NaN outside.
	s, err := h.Observed(ctx, "DE", forecast.SignalLifecycle, t0.Add(-time.Hour), t0.Add(5*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Start.Equal(t0.Add(-time.Hour)) || len(s.Values) != 6 {
		t.Fatalf("series from %v of %d hours", s.Start, len(s.Values))
	}
	for i, want := range []float64{math.NaN(), 10, 20, 30, 40, math.NaN()} {
		if got := s.Values[i]; got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("hour %d = %v, want %v", i, got, want)
		}
	}
	if s, err := h.Observed(ctx, "SE", forecast.SignalLifecycle, t0, t0.Add(2*time.Hour)); err != nil || len(s.Values) != 2 || !math.IsNaN(s.Values[0]) {
		t.Errorf("unknown zone: %v, %v; want all NaN", s, err)
	}
	if _, err := h.Observed(ctx, "DE", forecast.SignalLifecycle, t0.Add(time.Hour), t0); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Errorf("to before from: %v, want EINVALID", err)
	}
}
