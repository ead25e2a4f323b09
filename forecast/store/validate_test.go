package store_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

var t0 = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)

func TestValidateRow(t *testing.T) {
	t.Parallel()
	good := store.ForecastRow{Zone: "DE", Signal: forecast.SignalLifecycle, ModelName: "m", ModelVersion: "1",
		IssuedAt: t0, TargetTime: t0.Add(time.Hour), Value: 300, Lower: 250, Upper: 350}
	nan := math.NaN()
	tests := []struct {
		name  string
		edit  func(r *store.ForecastRow)
		field string // "" when valid
	}{
		{"valid", func(*store.ForecastRow) {}, ""},
		{"no interval", func(r *store.ForecastRow) { r.Lower, r.Upper = nan, nan }, ""},
		{"target at issue time", func(r *store.ForecastRow) { r.TargetTime = r.IssuedAt }, ""},
		{"empty version allowed", func(r *store.ForecastRow) { r.ModelVersion = "" }, ""},
		{"zero-width interval", func(r *store.ForecastRow) { r.Lower, r.Upper = r.Value, r.Value }, ""},
		{"other time zone, same hour", func(r *store.ForecastRow) { r.IssuedAt = r.IssuedAt.In(time.FixedZone("X", 5*3600)) }, ""},
		{"no zone", func(r *store.ForecastRow) { r.Zone = "" }, "zone"},
		{"no signal", func(r *store.ForecastRow) { r.Signal = "" }, "signal"},
		{"no model", func(r *store.ForecastRow) { r.ModelName = "" }, "model_name"},
		{"zero issue time", func(r *store.ForecastRow) { r.IssuedAt = time.Time{} }, "issued_at"},
		{"issue off the hour", func(r *store.ForecastRow) { r.IssuedAt = r.IssuedAt.Add(time.Second) }, "issued_at"},
		{"half-hour time zone issue", func(r *store.ForecastRow) {
			r.IssuedAt = time.Date(2021, 3, 1, 5, 0, 0, 0, time.FixedZone("IST", 5*3600+1800))
		}, "issued_at"},
		{"target off the hour", func(r *store.ForecastRow) { r.TargetTime = r.TargetTime.Add(time.Minute) }, "target_time"},
		{"target before issue", func(r *store.ForecastRow) { r.TargetTime = r.IssuedAt.Add(-time.Hour) }, "target_time"},
		{"NaN value", func(r *store.ForecastRow) { r.Value = nan }, "value"},
		{"infinite value", func(r *store.ForecastRow) { r.Value = math.Inf(-1) }, "value"},
		{"lower only", func(r *store.ForecastRow) { r.Upper = nan }, "lower"},
		{"upper only", func(r *store.ForecastRow) { r.Lower = nan }, "lower"},
		{"reversed interval", func(r *store.ForecastRow) { r.Lower, r.Upper = r.Upper, r.Lower }, "lower"},
		{"infinite bound", func(r *store.ForecastRow) { r.Upper = math.Inf(1) }, "lower"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := good
			tt.edit(&r)
			err := store.ValidateRow(r)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ValidateRow: %v", err)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != tt.field {
				t.Fatalf("ValidateRow = %v, want %s naming %s", err, forecast.EINVALID, tt.field)
			}
		})
	}
}

func TestValidateObservations(t *testing.T) {
	t.Parallel()
	at := func(h int, v float64) store.Observation {
		return store.Observation{Time: t0.Add(time.Duration(h) * time.Hour), Value: v}
	}
	tests := []struct {
		name   string
		zone   forecast.Zone
		signal forecast.Signal
		obs    []store.Observation
		field  string
	}{
		{"valid with a gap", "DE", "direct", []store.Observation{at(0, 1), at(1, 0), at(5, 3)}, ""},
		{"empty", "DE", "direct", nil, ""},
		{"any signal name", "DE", "marginal", []store.Observation{at(0, 1)}, ""},
		{"no zone", "", "direct", nil, "zone"},
		{"no signal", "DE", "", nil, "signal"},
		{"zero time", "DE", "direct", []store.Observation{{Value: 1}}, "time"},
		{"off the hour", "DE", "direct", []store.Observation{{Time: t0.Add(30 * time.Minute), Value: 1}}, "time"},
		{"decreasing", "DE", "direct", []store.Observation{at(1, 1), at(0, 1)}, "time"},
		{"repeated", "DE", "direct", []store.Observation{at(1, 1), at(1, 1)}, "time"},
		{"negative", "DE", "direct", []store.Observation{at(0, -0.5)}, "value"},
		{"NaN", "DE", "direct", []store.Observation{at(0, math.NaN())}, "value"},
		{"infinite", "DE", "direct", []store.Observation{at(0, math.Inf(1))}, "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := store.ValidateObservations(tt.zone, tt.signal, tt.obs)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ValidateObservations: %v", err)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != tt.field {
				t.Fatalf("ValidateObservations = %v, want %s naming %s", err, forecast.EINVALID, tt.field)
			}
		})
	}
}

func TestCompleteHistory(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name    string
		values  []float64
		missing string // RFC 3339 hour named in the error; "" when complete
	}{
		{"complete", []float64{1, 2, 3}, ""},
		{"empty", nil, ""},
		{"first missing", []float64{nan, 2, 3}, "2021-03-01T00:00:00Z"},
		{"first of two gaps is named", []float64{1, nan, 3, nan}, "2021-03-01T01:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := store.CompleteHistory("DE", "direct", forecast.Series{Start: t0, Values: tt.values})
			if tt.missing == "" {
				if err != nil || len(got) != len(tt.values) {
					t.Fatalf("CompleteHistory = %v, %v", got, err)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !strings.Contains(err.Error(), tt.missing) {
				t.Fatalf("CompleteHistory error %v, want %s naming %s", err, forecast.EUNAVAILABLE, tt.missing)
			}
		})
	}
}
