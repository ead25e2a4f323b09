package models

import (
	"context"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Forecaster serves a Model in-process as a forecast.Forecaster: it reads
// the model's Lookback hours before the request's start from a History and
// runs Predict. It is safe for concurrent use when the History is.
type Forecaster struct {
	model   Model
	meta    Meta
	history forecast.History
	version string
	source  forecast.Source
}

var _ forecast.Forecaster = (*Forecaster)(nil)

// NewForecaster returns a Forecaster of m over h. version and source are
// copied into every forecast's provenance (source says which step of the
// fallback chain m is: zone, generic or baseline).
func NewForecaster(m Model, h forecast.History, version string, source forecast.Source) *Forecaster {
	return &Forecaster{model: m, meta: m.Meta(), history: h, version: version, source: source}
}

// Model returns the served model.
func (f *Forecaster) Model() Model { return f.model }

// Forecast implements forecast.Forecaster. It returns EINVALID when the
// horizon is not in 1..Horizon of the model or start is not hour-aligned,
// ENOTFOUND when the model is for another zone or signal (a generic model,
// whose Meta().Zone is "", serves any zone), and the History's error when
// the history before start is not available.
func (f *Forecaster) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	if req.Horizon < 1 || req.Horizon > f.meta.Horizon {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.EINVALID, "horizon", "horizon %d hours is not in 1..%d for model %s", req.Horizon, f.meta.Horizon, f.meta.Name)
	}
	if req.Start.IsZero() || !req.Start.Equal(req.Start.Truncate(forecast.Hour)) {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.EINVALID, "start", "start %s is not a whole hour", req.Start.UTC().Format(time.RFC3339))
	}
	if f.meta.Zone != "" && req.Zone != f.meta.Zone {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.ENOTFOUND, "zone", "model %s forecasts zone %s, not %s", f.meta.Name, f.meta.Zone, req.Zone)
	}
	if req.Signal != f.meta.Signal {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.ENOTFOUND, "signal", "model %s forecasts the %s signal, not %q", f.meta.Name, f.meta.Signal, req.Signal)
	}
	start := req.Start.UTC()
	hist, err := f.history.Last(ctx, req.Zone, req.Signal, start, f.meta.Lookback)
	if err != nil {
		return forecast.Forecast{}, err
	}
	out := make([]float64, f.meta.Horizon)
	var lower, upper []float64
	if im, ok := f.model.(IntervalModel); ok {
		lower, upper = make([]float64, f.meta.Horizon), make([]float64, f.meta.Horizon)
		if err := im.PredictInterval(hist, start, out, lower, upper); err != nil {
			return forecast.Forecast{}, err
		}
		lower, upper = lower[:req.Horizon:req.Horizon], upper[:req.Horizon:req.Horizon]
	} else if err := f.model.Predict(hist, start, out); err != nil {
		return forecast.Forecast{}, err
	}
	return forecast.Forecast{
		Zone:   req.Zone,
		Signal: req.Signal,
		Series: forecast.Series{Start: start, Values: out[:req.Horizon:req.Horizon]},
		Lower:  lower,
		Upper:  upper,
		Provenance: forecast.Provenance{
			Model: f.meta.Name, Version: f.version, Source: f.source, IssuedAt: start,
		},
	}, nil
}

// Names of registered models.
const (
	NamePrefix  = "carbon-forecaster-"
	GenericName = NamePrefix + "generic"
)

// ZoneModelName returns the registered-model name of zone's model,
// carbon-forecaster-<ZONE>.
func ZoneModelName(zone forecast.Zone) string { return NamePrefix + string(zone) }
