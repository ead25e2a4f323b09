package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// upsertObserved stores one series' observations passed as three parallel
// arrays: one statement and one round trip whatever their number. A row
// whose value and flag did not change keeps its updated_at.
const upsertObserved = `INSERT INTO observed_signals (zone, signal, time, value, estimated)
SELECT $1, $2, o.time, o.value, o.estimated
FROM unnest($3::timestamptz[], $4::double precision[], $5::boolean[]) AS o(time, value, estimated)
ON CONFLICT (zone, signal, time) DO UPDATE
SET value = excluded.value, estimated = excluded.estimated, updated_at = now()
WHERE (observed_signals.value, observed_signals.estimated) IS DISTINCT FROM (excluded.value, excluded.estimated)`

// UpsertObserved implements store.Observed with one INSERT … ON CONFLICT
// statement (atomic: on error nothing of the call is stored). Bad
// observations are EINVALID before anything is sent.
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
	times := make([]time.Time, len(obs))
	values := make([]float64, len(obs))
	estimated := make([]bool, len(obs))
	for i, o := range obs {
		times[i], values[i], estimated[i] = o.Time.UTC(), o.Value, o.Estimated
	}
	ctx, cancel := pgwire.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, upsertObserved, string(zone), string(signal), times, values, estimated)
	return backend.Classify(ctx, "upsert observed", err)
}

// LatestObserved implements store.Observed.
func (s *Store) LatestObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var latest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT max(time) FROM observed_signals WHERE zone = $1 AND signal = $2`,
		string(zone), string(signal)).Scan(&latest)
	if err != nil {
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

// observed is Observed that also counts the hours found.
func (s *Store) observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, int, error) {
	out, err := store.MissingSeries(from, to)
	if err != nil || out.Len() == 0 {
		return out, 0, err
	}
	from, to = out.Start, out.End()
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT time, value FROM observed_signals
WHERE zone = $1 AND signal = $2 AND time >= $3 AND time < $4`, string(zone), string(signal), from, to)
	if err != nil {
		return forecast.Series{}, 0, backend.Classify(ctx, "read observed", err)
	}
	found := 0
	var at time.Time
	var v float64
	_, err = pgx.ForEachRow(rows, []any{&at, &v}, func() error {
		if i, ok := out.Index(at); ok {
			out.Values[i] = v
			found++
		}
		return nil
	})
	if err != nil {
		return forecast.Series{}, 0, backend.Classify(ctx, "read observed", err)
	}
	return out, found, nil
}

// Last implements forecast.History: the n hours of zone's signal before
// end (floored to the hour), oldest first. ENOTFOUND when nothing of zone's
// signal is stored; EUNAVAILABLE naming the first missing hour; EINVALID
// (field "to") for n < 0.
func (s *Store) Last(ctx context.Context, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	return store.LastFrom(ctx, s.observed, s.known, zone, signal, end, n)
}

// known reports whether any observation of zone's signal is stored.
func (s *Store) known(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (bool, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM observed_signals WHERE zone = $1 AND signal = $2)`,
		string(zone), string(signal)).Scan(&ok)
	return ok, backend.Classify(ctx, "read observed", err)
}
