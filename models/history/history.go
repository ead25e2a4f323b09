// Package history serves observed carbon intensity from in-memory dataset
// tables as a forecast.History.
package history

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/store"
)

// Tables is a forecast.History over dataset tables. It never copies the
// tables and never changes them; Last returns copies, so it is safe for
// concurrent use as long as nobody writes the tables.
type Tables struct {
	tables map[forecast.Zone]*dataset.Table
}

var _ forecast.History = (*Tables)(nil)

// New returns a History over tables, which it keeps (a shallow copy of the
// map, not of the tables).
func New(tables map[forecast.Zone]*dataset.Table) *Tables {
	return &Tables{tables: maps.Clone(tables)}
}

// Zones returns the zones held, sorted.
func (t *Tables) Zones() []forecast.Zone { return slices.Sorted(maps.Keys(t.tables)) }

// Series returns zone's whole series of signal, and whether the zone is held.
// The values are shared with the table; do not change them.
func (t *Tables) Series(zone forecast.Zone, signal forecast.Signal) (forecast.Series, bool) {
	tab, ok := t.tables[zone]
	if !ok || tab == nil {
		return forecast.Series{}, false
	}
	return tab.Series(signal), true
}

// Last implements forecast.History: a copy of the n hours before end.
// EINVALID for n < 0, an unknown signal or an end that is not a whole hour;
// ENOTFOUND for an unknown zone; EUNAVAILABLE when the table does not cover
// those hours.
func (t *Tables) Last(ctx context.Context, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "history length %d is negative", n)
	}
	if signal != forecast.SignalDirect && signal != forecast.SignalLifecycle {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "signal", "signal %q is not one of lifecycle, direct", signal)
	}
	if !end.Equal(end.Truncate(forecast.Hour)) {
		return nil, forecast.Errorf(forecast.EINVALID, "history end %s is not a whole hour", end.UTC().Format(time.RFC3339))
	}
	s, ok := t.Series(zone, signal)
	if !ok {
		return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "zone", "no observed data for zone %s", zone)
	}
	v, ok := s.Last(end, n)
	if !ok {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "observed %s data of %s covers %s to %s, not the %d hours before %s",
			signal, zone, s.Start.Format(time.RFC3339), s.End().Format(time.RFC3339), n, end.UTC().Format(time.RFC3339))
	}
	return slices.Clone(v), nil
}

// Observed returns zone's signal over [from, to) (whole hours, from rounded
// down) as an hourly series starting at from, NaN for the hours the table
// does not hold, as store.Observed does; an unknown zone is all NaN.
// EINVALID when to is before from.
func (t *Tables) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	if err := ctx.Err(); err != nil {
		return forecast.Series{}, err
	}
	out, err := store.MissingSeries(from, to)
	if err != nil {
		return out, err
	}
	s, ok := t.Series(zone, signal)
	if !ok {
		return out, nil
	}
	for i := range out.Values {
		if v, ok := s.At(out.Start.Add(time.Duration(i) * forecast.Hour)); ok {
			out.Values[i] = v
		}
	}
	return out, nil
}
