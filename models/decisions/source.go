package decisions

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/baseline"
)

// Forecasts gives the forecasts a source issued.
type Forecasts interface {
	// Issue returns the forecast of zone issued at at (hour-aligned, UTC),
	// starting at at and covering at least hours hours; false when the
	// source has none for that issue (its history is incomplete, nothing
	// is stored). Errors are for what a replay cannot go on from.
	Issue(ctx context.Context, zone forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error)
}

// Source is a named forecast source whose picks are replayed.
type Source struct {
	Name      string
	Forecasts Forecasts
}

// Names of the reference sources.
const (
	Oracle        = "oracle"         // picks on the observations: the most any forecast can save
	SeasonalNaive = "seasonal-naive" // the last 24 observed hours repeated
)

// ModelForecasts issues forecasts in-process: each zone's model (or
// Fallback for a zone without one) run on the Lookback observed hours
// before the issue time, as the gateway's in-process steps do.
type ModelForecasts struct {
	Models   map[forecast.Zone]models.Model
	Fallback models.Model // nil: none
	Observed map[forecast.Zone]forecast.Series
}

// Issue implements Forecasts: false when the zone has no model or its
// history is not all observed; EINVALID when the model forecasts fewer
// than hours hours, its own error when Predict fails, EINTERNAL for a
// non-finite forecast.
func (f ModelForecasts) Issue(_ context.Context, zone forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error) {
	m, ok := f.Models[zone]
	if !ok {
		m = f.Fallback
	}
	if m == nil {
		return forecast.Series{}, false, nil
	}
	meta := m.Meta()
	if meta.Horizon < hours {
		return forecast.Series{}, false, forecast.FieldErrorf(forecast.EINVALID, "shapes", "model %s forecasts %d hours, the longest slack needs %d", meta.Name, meta.Horizon, hours)
	}
	h, ok := f.Observed[zone].Last(at, meta.Lookback)
	if !ok || !allFinite(h) {
		return forecast.Series{}, false, nil
	}
	out := make([]float64, meta.Horizon)
	if err := m.Predict(h, at, out); err != nil {
		return forecast.Series{}, false, err
	}
	if !allFinite(out[:hours]) {
		return forecast.Series{}, false, forecast.Errorf(forecast.EINTERNAL, "model %s issued a non-finite forecast for %s at %s", meta.Name, zone, at.Format(time.RFC3339))
	}
	return forecast.Series{Start: at, Values: out[:hours]}, true, nil
}

// NaiveForecasts is the seasonal-naive source over observed: the last 24
// observed hours repeated, horizon hours ahead.
func NaiveForecasts(observed map[forecast.Zone]forecast.Series, signal forecast.Signal, horizon int) (ModelForecasts, error) {
	m, err := baseline.NewSeasonalNaive("", signal, baseline.Daily, baseline.Daily, horizon)
	if err != nil {
		return ModelForecasts{}, err
	}
	return ModelForecasts{Fallback: m, Observed: observed}, nil
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
