// Package models holds carbongate's forecasting model families and the
// interface they share. A Model maps the forecaster tensor contract of
// docs/ARCHITECTURE.md: L hours of history, oldest first, ending the hour
// before start, plus the start time, to H hourly values.
package models

import (
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Meta describes a trained model.
type Meta struct {
	Name     string          // registered model name, e.g. carbon-forecaster-DE
	Family   string          // persistence, seasonal-naive, ridge, generic-ridge, ...
	Zone     forecast.Zone   // the zone it was trained for; "" for a generic model
	Signal   forecast.Signal // the signal it forecasts
	Lookback int             // L: hours of history Predict needs
	Horizon  int             // H: hours Predict returns
}

// Model is a trained forecaster. Predict is safe for concurrent use.
type Model interface {
	Meta() Meta
	// Predict writes Horizon values into out (len(out) == Horizon) from
	// history (len(history) == Lookback, oldest first, ending the hour before
	// start; start is UTC and hour-aligned). It returns EINVALID for wrong
	// lengths or non-finite history.
	Predict(history []float64, start time.Time, out []float64) error
}

// TrainingInfo describes the data a model was fitted on.
type TrainingInfo struct {
	From    time.Time       // first observation used (inclusive)
	Until   time.Time       // no observation at or after Until was used
	Samples int             // training samples (issue hours)
	Zones   []forecast.Zone // zones whose data was used
}

// Trained is implemented by models fitted on data; baselines do not have it.
type Trained interface {
	Training() TrainingInfo
}

// IntervalModel is a Model that also gives a prediction interval: lower and
// upper (len Horizon each) bound the hour's value at the model's nominal
// coverage (Meta-independent; the model records it in its artifact).
// carbonserve answers the optional lower/upper outputs of the tensor
// contract for such models; backfills store them.
type IntervalModel interface {
	Model
	PredictInterval(history []float64, start time.Time, out, lower, upper []float64) error
}
