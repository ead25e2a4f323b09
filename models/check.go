package models

import (
	"fmt"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// CheckInput validates the arguments of Predict against meta: lengths, a UTC
// hour-aligned start and finite history. It returns EINVALID naming the
// problem. Families call it first thing in Predict.
func CheckInput(meta Meta, history []float64, start time.Time, out []float64) error {
	if len(history) != meta.Lookback {
		return forecast.FieldErrorf(forecast.EINVALID, "history", "history has %d hours, model %s needs %d", len(history), meta.Family, meta.Lookback)
	}
	if len(out) != meta.Horizon {
		return forecast.FieldErrorf(forecast.EINVALID, "forecast", "output has %d hours, model %s writes %d", len(out), meta.Family, meta.Horizon)
	}
	if !start.Equal(start.Truncate(forecast.Hour)) {
		return forecast.FieldErrorf(forecast.EINVALID, "start_unix", "start %s is not hour-aligned", start.UTC().Format(time.RFC3339))
	}
	for i, v := range history {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return forecast.FieldErrorf(forecast.EINVALID, "history", "history[%d] is not finite", i)
		}
	}
	return nil
}

// PredictBatch runs m.Predict on B rows: history is B×Lookback and out is
// B×Horizon, both row-major, and starts has B entries. It stops at the first
// error, which names the row.
func PredictBatch(m Model, history []float64, starts []time.Time, out []float64) error {
	meta := m.Meta()
	b := len(starts)
	if len(history) != b*meta.Lookback || len(out) != b*meta.Horizon {
		return forecast.Errorf(forecast.EINVALID, "batch of %d needs %d history and %d output values, got %d and %d",
			b, b*meta.Lookback, b*meta.Horizon, len(history), len(out))
	}
	for i, s := range starts {
		h := history[i*meta.Lookback : (i+1)*meta.Lookback]
		o := out[i*meta.Horizon : (i+1)*meta.Horizon]
		if err := m.Predict(h, s, o); err != nil {
			return &forecast.Error{Code: forecast.ErrorCode(err), Field: forecast.ErrorField(err), Message: fmt.Sprintf("row %d: %s", i, forecast.ErrorMessage(err)), Err: err}
		}
	}
	return nil
}
