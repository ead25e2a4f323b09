// Package servetest trains tiny carbongate models for the tests and
// benchmarks of models/serve, cmd/carbonserve and registry/s3: small ridge
// models (L = 48, H = 12) fitted in milliseconds on a synthetic series, saved
// as MLflow model directories.
package servetest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/ridge"
)

// Shape of the models Ridge trains.
const (
	Lookback = 48
	Horizon  = 12
)

// T0 is the first hour of the synthetic series.
var T0 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Series returns days of a synthetic hourly series with a daily cycle;
// seed shifts its level and phase so that models fitted on different seeds
// forecast differently.
func Series(days int, seed int) forecast.Series {
	v := make([]float64, days*24)
	for i := range v {
		x := float64(i)
		v[i] = 250 + 40*float64(seed) + 70*math.Sin(2*math.Pi*(x+3*float64(seed))/24) + 9*math.Cos(x*0.41+float64(seed))
	}
	return forecast.Series{Start: T0, Values: v}
}

// Ridge fits a tiny point-forecast ridge model (no interval) for zone ("" =
// generic) named name on Series(30, seed).
func Ridge(tb testing.TB, name string, zone forecast.Zone, seed int) models.Model {
	tb.Helper()
	c := tiny()
	c.Folds, c.LambdaGrid, c.Interval = 0, nil, 0
	return fit(tb, name, zone, seed, c)
}

// RidgeInterval is Ridge with an 80 % prediction interval calibrated by
// 3-fold cross-validation: a models.IntervalModel.
func RidgeInterval(tb testing.TB, name string, zone forecast.Zone, seed int) models.Model {
	tb.Helper()
	c := tiny()
	c.Folds, c.LambdaGrid, c.Interval = 3, nil, 0.8
	return fit(tb, name, zone, seed, c)
}

func tiny() ridge.Config {
	c := ridge.DefaultConfig()
	c.Lookback, c.Horizon, c.NormWindow, c.Origins, c.Profile = Lookback, Horizon, 24, 1, 0
	c.Lags = []int{1, 2, 3, 6, 12, 24, 48}
	return c
}

func fit(tb testing.TB, name string, zone forecast.Zone, seed int, c ridge.Config) models.Model {
	tb.Helper()
	in := zone
	if in == "" {
		in = "DE"
	}
	m, err := ridge.Fit(context.Background(), ridge.Spec{Name: name, Zone: zone, Signal: forecast.SignalLifecycle,
		Until: T0.Add(30 * 24 * time.Hour), Config: c}, []ridge.Input{{Zone: in, Series: Series(30, seed)}})
	if err != nil {
		tb.Fatal(err)
	}
	return m.Serving()
}

// Production fits a ridge model of the production shape
// (ridge.DefaultConfig: L = 168, H = 96, 24 issue-hour weight sets,
// cross-validated λ and an 80 % interval) on Series(60, seed), for
// benchmarks: a models.IntervalModel. It takes about a second.
func Production(tb testing.TB, name string, zone forecast.Zone, seed int) models.Model {
	tb.Helper()
	m, err := ridge.Fit(context.Background(), ridge.Spec{Name: name, Zone: zone, Signal: forecast.SignalLifecycle,
		Until: T0.Add(60 * 24 * time.Hour), Config: ridge.DefaultConfig()}, []ridge.Input{{Zone: "DE", Series: Series(60, seed)}})
	if err != nil {
		tb.Fatal(err)
	}
	return m.Serving()
}

// Save writes m to dir as an MLflow model directory (atomically replacing
// a previous one).
func Save(tb testing.TB, dir string, m models.Model) {
	tb.Helper()
	if err := artifact.Save(dir, m); err != nil {
		tb.Fatal(err)
	}
}

// Input returns b rows of history and start times for a model of
// servetest's shape: row i is the Lookback hours of Series(40, 0) before
// T0 + 32 days + i mod 168 hours.
func Input(b int) (history []float32, starts []int64) { return InputL(b, Lookback) }

// InputL is Input for a lookback of l hours (at most 32 days).
func InputL(b, l int) (history []float32, starts []int64) {
	s := Series(40, 0)
	for i := range b {
		start := T0.Add(time.Duration(32*24+i%(7*24)) * time.Hour)
		h, ok := s.Last(start, l)
		if !ok {
			panic("servetest: series too short")
		}
		for _, v := range h {
			history = append(history, float32(v))
		}
		starts = append(starts, start.Unix())
	}
	return history, starts
}

// Want returns what m forecasts for the rows of Input, as the float32
// values a server answers: history widened from float32, Predict, narrowed.
func Want(tb testing.TB, m models.Model, history []float32, starts []int64) []float32 {
	tb.Helper()
	meta := m.Meta()
	out := make([]float32, 0, len(starts)*meta.Horizon)
	h := make([]float64, meta.Lookback)
	o := make([]float64, meta.Horizon)
	for i, u := range starts {
		for j := range h {
			h[j] = float64(history[i*meta.Lookback+j])
		}
		if err := m.Predict(h, time.Unix(u, 0).UTC(), o); err != nil {
			tb.Fatal(err)
		}
		for _, v := range o {
			out = append(out, float32(v))
		}
	}
	return out
}

// WantInterval returns what interval model m answers for the rows of
// Input: forecast, lower and upper as float32 values, like Want.
func WantInterval(tb testing.TB, m models.IntervalModel, history []float32, starts []int64) (fc, lower, upper []float32) {
	tb.Helper()
	meta := m.Meta()
	h := make([]float64, meta.Lookback)
	o, lo, hi := make([]float64, meta.Horizon), make([]float64, meta.Horizon), make([]float64, meta.Horizon)
	for i, u := range starts {
		for j := range h {
			h[j] = float64(history[i*meta.Lookback+j])
		}
		if err := m.PredictInterval(h, time.Unix(u, 0).UTC(), o, lo, hi); err != nil {
			tb.Fatal(err)
		}
		for k := range o {
			fc, lower, upper = append(fc, float32(o[k])), append(lower, float32(lo[k])), append(upper, float32(hi[k]))
		}
	}
	return fc, lower, upper
}
