package store

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// ValidateRow checks a forecast row before it is written: key fields set,
// times on the hour with the target at or after the issue time, a finite
// value and, when present, a finite interval around it.
func ValidateRow(r ForecastRow) error {
	switch {
	case r.Zone == "":
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "forecast row without a zone")
	case r.Signal == "":
		return forecast.FieldErrorf(forecast.EINVALID, "signal", "forecast row of zone %s without a signal", r.Zone)
	case r.ModelName == "":
		return forecast.FieldErrorf(forecast.EINVALID, "model_name", "forecast row of zone %s without a model name", r.Zone)
	case !onHour(r.IssuedAt):
		return forecast.FieldErrorf(forecast.EINVALID, "issued_at", "issued_at %s is not a whole hour", r.IssuedAt.UTC().Format(time.RFC3339))
	case !onHour(r.TargetTime) || r.TargetTime.Before(r.IssuedAt):
		return forecast.FieldErrorf(forecast.EINVALID, "target_time", "target_time %s is not a whole hour at or after issued_at %s", r.TargetTime.UTC().Format(time.RFC3339), r.IssuedAt.UTC().Format(time.RFC3339))
	case !finite(r.Value):
		return forecast.FieldErrorf(forecast.EINVALID, "value", "forecast of %s for %s is %v", r.Zone, r.TargetTime.UTC().Format(time.RFC3339), r.Value)
	case math.IsNaN(r.Lower) != math.IsNaN(r.Upper):
		return forecast.FieldErrorf(forecast.EINVALID, "lower", "forecast of %s for %s has only one interval bound", r.Zone, r.TargetTime.UTC().Format(time.RFC3339))
	case r.HasInterval() && (math.IsInf(r.Lower, 0) || math.IsInf(r.Upper, 0) || r.Lower > r.Upper):
		return forecast.FieldErrorf(forecast.EINVALID, "lower", "forecast of %s for %s has interval [%v, %v]", r.Zone, r.TargetTime.UTC().Format(time.RFC3339), r.Lower, r.Upper)
	}
	return nil
}

// ValidateObservations checks observations before they are stored: a zone
// and signal, hours on the hour in increasing order, finite values ≥ 0.
func ValidateObservations(zone forecast.Zone, signal forecast.Signal, obs []Observation) error {
	if zone == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "observations without a zone")
	}
	if signal == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "signal", "observations of zone %s without a signal", zone)
	}
	for i, o := range obs {
		at := o.Time.UTC().Format(time.RFC3339)
		if !onHour(o.Time) {
			return forecast.FieldErrorf(forecast.EINVALID, "time", "observation of %s at %s is not on the hour", zone, at)
		}
		if i > 0 && !o.Time.After(obs[i-1].Time) {
			return forecast.FieldErrorf(forecast.EINVALID, "time", "observations of %s are not in increasing time order at %s", zone, at)
		}
		if !finite(o.Value) || o.Value < 0 {
			return forecast.FieldErrorf(forecast.EINVALID, "value", "observation of %s at %s has value %v", zone, at, o.Value)
		}
	}
	return nil
}

// CompleteHistory returns s's values when none is missing (NaN), and
// EUNAVAILABLE naming the first missing hour otherwise: models need an
// unbroken history.
func CompleteHistory(zone forecast.Zone, signal forecast.Signal, s forecast.Series) ([]float64, error) {
	for i, v := range s.Values {
		if math.IsNaN(v) {
			at := s.Start.Add(time.Duration(i) * forecast.Hour).Format(time.RFC3339)
			return nil, forecast.Errorf(forecast.EUNAVAILABLE, "store: no observation of zone %s signal %s at %s", zone, signal, at)
		}
	}
	return s.Values, nil
}

func onHour(t time.Time) bool { return !t.IsZero() && t.Equal(t.Truncate(forecast.Hour)) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// SeriesReader reads zone's signal over [from, to) as an hourly series
// (NaN where nothing is stored) and says how many hours were found.
type SeriesReader func(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, int, error)

// KnownFunc reports whether anything of zone's signal is stored.
type KnownFunc func(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (bool, error)

// LastFrom implements forecast.History's Last for a database store: the n
// hours before end (floored to the hour), oldest first; ENOTFOUND when
// nothing of zone's signal is stored, EUNAVAILABLE naming the first
// missing hour. known is asked only when no hour of the window is found.
func LastFrom(ctx context.Context, read SeriesReader, known KnownFunc, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	end = forecast.HourFloor(end)
	series, found, err := read(ctx, zone, signal, end.Add(-time.Duration(n)*forecast.Hour), end)
	if err != nil {
		return nil, err
	}
	if found == 0 {
		ok, err := known(ctx, zone, signal)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, forecast.Errorf(forecast.ENOTFOUND, "store: no observations of zone %s signal %s", zone, signal)
		}
	}
	return CompleteHistory(zone, signal, series)
}

// MissingSeries floors from and to to the hour and returns the hourly
// series over [from, to) with every hour missing (NaN), for a reader to
// fill; EINVALID (field "to") when to is before from.
func MissingSeries(from, to time.Time) (forecast.Series, error) {
	from, to = forecast.HourFloor(from), forecast.HourFloor(to)
	n := int(to.Sub(from) / forecast.Hour)
	if n < 0 {
		return forecast.Series{}, forecast.FieldErrorf(forecast.EINVALID, "to", "to %s is before from %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	out := forecast.Series{Start: from, Values: make([]float64, n)}
	for i := range out.Values {
		out.Values[i] = math.NaN()
	}
	return out, nil
}
