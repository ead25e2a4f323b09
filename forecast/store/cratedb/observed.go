package cratedb

import (
	"context"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/internal/pgwire"
)

var observedCols = []column{{"zone", "text[]"}, {"signal", "text[]"}, {"time", "timestamp with time zone[]"},
	{"value", "double precision[]"}, {"estimated", "boolean[]"}}

// UpsertObserved implements store.Observed: upsert statements of at most
// MaxBatch observations, then REFRESH TABLE observed_signals. Bad
// observations are EINVALID before anything is sent. Not atomic: on error
// some batches may be stored; repeating the call is harmless.
func (s *Store) UpsertObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal, obs []store.Observation) error {
	if err := store.ValidateObservations(zone, signal, obs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(obs) == 0 {
		return nil
	}
	ctx, cancel := pgwire.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	upsert := upsertClause(names(observedCols[:3]), []string{"value", "estimated"}, `"updated_at" = CURRENT_TIMESTAMP`)
	for batch := range slices.Chunk(obs, s.maxBatch) {
		n := len(batch)
		zones, signals, times := make([]string, n), make([]string, n), make([]time.Time, n)
		values, estimated := make([]float64, n), make([]bool, n)
		for i, o := range batch {
			zones[i], signals[i], times[i], values[i], estimated[i] = string(zone), string(signal), o.Time.UTC(), o.Value, o.Estimated
		}
		if _, err := s.db.Exec(ctx, insertSQL("observed_signals", observedCols, upsert), zones, signals, times, values, estimated); err != nil {
			return backend.Classify(ctx, "upsert observed", err)
		}
	}
	if _, err := s.db.Exec(ctx, refresh("observed_signals")); err != nil {
		return backend.Classify(ctx, "upsert observed", err)
	}
	return nil
}

// LatestObserved implements store.Observed.
func (s *Store) LatestObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	rows, err := s.db.Query(ctx, `SELECT max("time") FROM "observed_signals" WHERE "zone" = $1 AND "signal" = $2`, string(zone), string(signal))
	if err != nil {
		return time.Time{}, false, backend.Classify(ctx, "latest observed", err)
	}
	defer rows.Close()
	var latest *time.Time
	if rows.Next() {
		if err := rows.Scan(&latest); err != nil {
			return time.Time{}, false, backend.Classify(ctx, "latest observed", err)
		}
	}
	if err := rows.Err(); err != nil {
		return time.Time{}, false, backend.Classify(ctx, "latest observed", err)
	}
	if latest == nil {
		return time.Time{}, false, nil
	}
	return latest.UTC(), true, nil
}

// Observed implements store.Observed: from and to are floored to the hour;
// EINVALID (field "to") when to is before from.
func (s *Store) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	out, _, err := s.observed(ctx, zone, signal, from, to)
	return out, err
}

func (s *Store) observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, int, error) {
	out, err := store.MissingSeries(from, to)
	if err != nil || out.Len() == 0 {
		return out, 0, err
	}
	from, to = out.Start, out.End()
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	rows, err := s.db.Query(ctx, `SELECT "time", "value" FROM "observed_signals" WHERE "zone" = $1 AND "signal" = $2 AND "time" >= $3 AND "time" < $4`,
		string(zone), string(signal), from, to)
	if err != nil {
		return forecast.Series{}, 0, backend.Classify(ctx, "read observed", err)
	}
	defer rows.Close()
	found := 0
	for rows.Next() {
		var at time.Time
		var v float64
		if err := rows.Scan(&at, &v); err != nil {
			return forecast.Series{}, 0, backend.Classify(ctx, "read observed", err)
		}
		if i, ok := out.Index(at); ok {
			out.Values[i] = v
			found++
		}
	}
	if err := rows.Err(); err != nil {
		return forecast.Series{}, 0, backend.Classify(ctx, "read observed", err)
	}
	return out, found, nil
}

// Last implements forecast.History: the n hours of zone's signal before
// end (floored to the hour), oldest first. ENOTFOUND when nothing of zone's
// signal is stored; EUNAVAILABLE naming the first missing hour; EINVALID
// for n < 0.
func (s *Store) Last(ctx context.Context, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	return store.LastFrom(ctx, s.observed, s.known, zone, signal, end, n)
}

// known reports whether any observation of zone's signal is stored.
func (s *Store) known(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (bool, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	rows, err := s.db.Query(ctx, `SELECT "time" FROM "observed_signals" WHERE "zone" = $1 AND "signal" = $2 LIMIT 1`, string(zone), string(signal))
	if err != nil {
		return false, backend.Classify(ctx, "read observed", err)
	}
	defer rows.Close()
	ok := rows.Next()
	return ok, backend.Classify(ctx, "read observed", rows.Err())
}
