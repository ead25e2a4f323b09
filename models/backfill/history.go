package backfill

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// History is where observed intensity comes from. Series returns zone's
// signal over [from, to) as an hourly series starting at from, NaN for hours
// it does not know; ENOTFOUND is treated like a series of NaN.
type History interface {
	Series(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error)
}

// ObservedHistory reads history from the observed-signals store.
type ObservedHistory struct{ Store store.Observed }

// Series implements History.
func (h ObservedHistory) Series(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	return h.Store.Observed(ctx, zone, signal, from, to)
}

// SeriesTable is the part of a dataset table history is read from;
// *dataset.Table implements it.
type SeriesTable interface {
	Series(sig forecast.Signal) forecast.Series
}

// TableHistory reads history from dataset tables (a data directory or the
// bundled data). A zone without a table has no history.
type TableHistory[T SeriesTable] struct{ Tables map[forecast.Zone]T }

// Series implements History.
func (h TableHistory[T]) Series(_ context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	out := nanSeries(from, to)
	t, ok := h.Tables[zone]
	if !ok {
		return out, nil
	}
	s := t.Series(signal)
	for i := range out.Values {
		if v, ok := s.At(out.Start.Add(time.Duration(i) * forecast.Hour)); ok {
			out.Values[i] = v
		}
	}
	return out, nil
}

// nanSeries is the hourly series over [from, to) with every hour missing;
// empty when to is not after from.
func nanSeries(from, to time.Time) forecast.Series {
	out, err := store.MissingSeries(from, to)
	if err != nil {
		return forecast.Series{Start: forecast.HourFloor(from)}
	}
	return out
}

// window returns the lookback hours strictly before t from s, and false when
// s does not cover them or one of them is missing (a gap).
func window(s forecast.Series, t time.Time, lookback int) ([]float64, bool) {
	h, ok := s.Last(t, lookback)
	if !ok {
		return nil, false
	}
	for _, v := range h {
		if math.IsNaN(v) {
			return nil, false
		}
	}
	return h, true
}

// anyObserved reports whether s holds at least one value.
func anyObserved(s forecast.Series) bool {
	for _, v := range s.Values {
		if !math.IsNaN(v) {
			return true
		}
	}
	return false
}
