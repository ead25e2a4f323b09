package models_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/baseline"
	"github.com/carbongate/carbongate/models/serve/servetest"
)

// sliceHistory serves one hourly series for every zone and signal.
type sliceHistory struct{ s forecast.Series }

func (h sliceHistory) Last(_ context.Context, zone forecast.Zone, _ forecast.Signal, end time.Time, n int) ([]float64, error) {
	v, ok := h.s.Last(end, n)
	if !ok {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "no history for %s before %s", zone, end)
	}
	return slices.Clone(v), nil
}

var t0 = time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)

func history() sliceHistory {
	v := make([]float64, 48)
	for i := range v {
		v[i] = float64(100 + i)
	}
	return sliceHistory{forecast.Series{Start: t0, Values: v}}
}

func ExampleNewForecaster() {
	m, _ := baseline.NewPersistence("DE", forecast.SignalDirect, 24, 96)
	f := models.NewForecaster(m, history(), "3", forecast.SourceBaseline)
	start := t0.Add(48 * time.Hour)
	fc, err := f.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalDirect, Start: start, Horizon: 3})
	if err != nil {
		panic(err)
	}
	fmt.Println(fc.Series.Values, fc.Provenance.Model, fc.Provenance.Version, fc.Provenance.Source, fc.Provenance.IssuedAt.Format(time.RFC3339))
	// Output: [147 147 147] persistence 3 baseline 2021-06-03T00:00:00Z
}

func TestForecasterErrors(t *testing.T) {
	t.Parallel()
	m, _ := baseline.NewPersistence("DE", forecast.SignalDirect, 24, 96)
	f := models.NewForecaster(m, history(), "", forecast.SourceZone)
	ok := forecast.Request{Zone: "DE", Signal: forecast.SignalDirect, Start: t0.Add(48 * time.Hour), Horizon: 96}
	tests := []struct {
		name   string
		mutate func(r *forecast.Request)
		code   string
	}{
		{"ok", func(r *forecast.Request) {}, ""},
		{"horizon beyond the model", func(r *forecast.Request) { r.Horizon = 97 }, forecast.EINVALID},
		{"zero horizon", func(r *forecast.Request) { r.Horizon = 0 }, forecast.EINVALID},
		{"start off the hour", func(r *forecast.Request) { r.Start = r.Start.Add(time.Second) }, forecast.EINVALID},
		{"other zone", func(r *forecast.Request) { r.Zone = "SE" }, forecast.ENOTFOUND},
		{"other signal", func(r *forecast.Request) { r.Signal = forecast.SignalLifecycle }, forecast.ENOTFOUND},
		{"history too short", func(r *forecast.Request) { r.Start = t0.Add(10 * time.Hour) }, forecast.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ok
			tt.mutate(&r)
			fc, err := f.Forecast(context.Background(), r)
			if got := forecast.ErrorCode(err); got != tt.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tt.code)
			}
			if err == nil && (fc.Series.Len() != r.Horizon || !fc.Series.Start.Equal(r.Start) || fc.Zone != r.Zone) {
				t.Fatalf("forecast=%+v", fc)
			}
		})
	}
}

func TestPredictBatch(t *testing.T) {
	t.Parallel()
	m, _ := baseline.NewPersistence("", forecast.SignalDirect, 2, 3)
	out := make([]float64, 6)
	if err := models.PredictBatch(m, []float64{1, 2, 3, 4}, []time.Time{t0, t0}, out); err != nil {
		t.Fatal(err)
	}
	if want := []float64{2, 2, 2, 4, 4, 4}; !slices.Equal(out, want) {
		t.Fatalf("out=%v, want %v", out, want)
	}
	if err := models.PredictBatch(m, []float64{1, 2, 3}, []time.Time{t0, t0}, out); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("ragged batch: err=%v, want EINVALID", err)
	}
}

// An interval model's forecasts carry its prediction interval, cut to the
// horizon asked for; a point model's carry none.
func TestForecasterInterval(t *testing.T) {
	t.Parallel()
	hist := sliceHistory{servetest.Series(30, 1)}
	start := servetest.T0.Add(20 * 24 * time.Hour)
	req := forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: start, Horizon: servetest.Horizon - 2}
	f := models.NewForecaster(servetest.RidgeInterval(t, "carbon-forecaster-DE", "DE", 1), hist, "1", forecast.SourceZone)
	fc, err := f.Forecast(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(fc.Lower) != req.Horizon || len(fc.Upper) != req.Horizon || len(fc.Series.Values) != req.Horizon {
		t.Fatalf("lengths %d %d %d, want %d", len(fc.Lower), len(fc.Upper), len(fc.Series.Values), req.Horizon)
	}
	for i := range fc.Lower {
		if !(fc.Lower[i] <= fc.Series.Values[i] && fc.Series.Values[i] <= fc.Upper[i]) {
			t.Fatalf("hour %d: %v not in [%v, %v]", i, fc.Series.Values[i], fc.Lower[i], fc.Upper[i])
		}
	}
	p := models.NewForecaster(servetest.Ridge(t, "carbon-forecaster-DE", "DE", 1), hist, "1", forecast.SourceZone)
	if fc, err := p.Forecast(context.Background(), req); err != nil || fc.Lower != nil || fc.Upper != nil {
		t.Fatalf("point model: %v, lower %v upper %v; want no interval", err, fc.Lower, fc.Upper)
	}
}
