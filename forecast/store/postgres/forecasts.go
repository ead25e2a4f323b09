package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/sqlstore"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// stagingMode chooses how WriteForecasts gets its staging table.
type stagingMode int

const (
	// stagingSession keeps one temporary table per connection, created on
	// first use and emptied at every commit (ON COMMIT DELETE ROWS). The
	// default: no catalog change per call (see the benchmark).
	stagingSession stagingMode = iota
	// stagingDrop creates a temporary table in each transaction and drops
	// it at commit.
	stagingDrop
)

const (
	stagingColumns = `zone text, signal text, model_name text, model_version text,
	issued_at timestamptz, target_time timestamptz, value double precision,
	lower double precision, upper double precision`
	columnList = "zone, signal, model_name, model_version, issued_at, target_time, value, lower, upper"
)

func (m stagingMode) table() string {
	if m == stagingDrop {
		return "forecasts_staging_tx"
	}
	return "forecasts_staging"
}

// createStaging returns the statement that provides the staging table in
// the current transaction.
func (m stagingMode) createStaging() string {
	if m == stagingDrop {
		return "CREATE TEMP TABLE " + m.table() + " (" + stagingColumns + ") ON COMMIT DROP"
	}
	return "CREATE TEMP TABLE IF NOT EXISTS " + m.table() + " (" + stagingColumns + ") ON COMMIT DELETE ROWS"
}

// copyStatement is the binary COPY into the staging table.
func (m stagingMode) copyStatement() string {
	return "COPY " + m.table() + " (" + columnList + ") FROM STDIN (FORMAT binary)"
}

// insertStaged moves the staged rows into forecasts, in primary-key order
// (the staging table holds them sorted), under a savepoint: a plain INSERT
// fails on the first key that is already stored.
func (m stagingMode) insertStaged() string {
	return "SAVEPOINT staged_insert; INSERT INTO forecasts (" + columnList + ") SELECT " + columnList + " FROM " + m.table()
}

// upsertStaged is the upsert of the staged rows; rows whose values did not
// change are left untouched, so a re-run rewrites nothing.
func (m stagingMode) upsertStaged() string {
	return "ROLLBACK TO SAVEPOINT staged_insert; INSERT INTO forecasts (" + columnList + ") SELECT " + columnList + " FROM " + m.table() + `
ON CONFLICT (zone, signal, model_name, model_version, issued_at, target_time) DO UPDATE
SET value = excluded.value, lower = excluded.lower, upper = excluded.upper
WHERE (forecasts.value, forecasts.lower, forecasts.upper) IS DISTINCT FROM (excluded.value, excluded.lower, excluded.upper)`
}

// moveStaged upserts the staged rows into forecasts. A plain INSERT is
// tried first: it is about twice as fast as INSERT … ON CONFLICT when no
// key is stored yet (a first backfill), and fails at the first stored key
// when one is (rows are sorted, so a re-written unit fails early); then the
// savepoint undoes it and the upsert runs.
func moveStaged(ctx context.Context, tx pgx.Tx, m stagingMode) error {
	_, err := tx.Exec(ctx, m.insertStaged())
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != "23505" {
		return err
	}
	_, err = tx.Exec(ctx, m.upsertStaged())
	return err
}

const insertCheckpoints = `INSERT INTO backfill_checkpoints (job, zone, issued_at)
SELECT $1, u.zone, u.issued_at FROM unnest($2::text[], $3::timestamptz[]) AS u(zone, issued_at)
ON CONFLICT (job, zone, issued_at) DO NOTHING`

// WriteForecasts implements store.Forecasts in one transaction: binary COPY
// of rows into the staging table, one upsert into forecasts, the units into
// backfill_checkpoints, commit. A bad row or unit is EINVALID before
// anything is sent; when the call fails nothing of it is visible. Rows with
// the same key in one call: the last one wins. rows is not modified.
func (s *Store) WriteForecasts(ctx context.Context, job string, units []store.Unit, rows []store.ForecastRow) error {
	for _, r := range rows {
		if err := store.ValidateRow(r); err != nil {
			return err
		}
	}
	for _, u := range units {
		if u.Zone == "" || u.IssuedAt.IsZero() {
			return forecast.FieldErrorf(forecast.EINVALID, "units", "backfill unit without a zone or issue time")
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(rows) == 0 && len(units) == 0 {
		return nil
	}
	rows = sortedRows(rows)
	zones, issued := sortedUnits(units)
	ctx, cancel := pgwire.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(rows) > 0 {
			if _, err := tx.Exec(ctx, s.staging.createStaging()); err != nil {
				return err
			}
			if _, err := tx.Conn().PgConn().CopyFrom(ctx, newCopyReader(rows), s.staging.copyStatement()); err != nil {
				return err
			}
			if err := moveStaged(ctx, tx, s.staging); err != nil {
				return err
			}
		}
		if len(zones) > 0 {
			if _, err := tx.Exec(ctx, insertCheckpoints, job, zones, issued); err != nil {
				return err
			}
		}
		return nil
	})
	return backend.Classify(ctx, "write forecasts", err)
}

// compareKeys orders rows by primary key. Every writer upserts in this
// order, so writers of overlapping rows lock them in the same order.
func compareKeys(a, b *store.ForecastRow) int {
	return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Signal, b.Signal),
		cmp.Compare(a.ModelName, b.ModelName), cmp.Compare(a.ModelVersion, b.ModelVersion),
		a.IssuedAt.Compare(b.IssuedAt), a.TargetTime.Compare(b.TargetTime))
}

// sortedRows returns rows in key order with one row per key (the last
// given), copying only when rows is not already so.
func sortedRows(rows []store.ForecastRow) []store.ForecastRow {
	clean := true
	for i := 1; i < len(rows) && clean; i++ {
		clean = compareKeys(&rows[i-1], &rows[i]) < 0
	}
	if clean {
		return rows
	}
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b store.ForecastRow) int { return compareKeys(&a, &b) })
	w := 0
	for i := range out {
		if i+1 < len(out) && compareKeys(&out[i], &out[i+1]) == 0 {
			continue // a later row of the same key follows
		}
		out[w] = out[i]
		w++
	}
	return out[:w]
}

// sortedUnits returns the units as two parallel arrays in (zone, issued_at)
// order.
func sortedUnits(units []store.Unit) ([]string, []time.Time) {
	us := slices.Clone(units)
	slices.SortFunc(us, func(a, b store.Unit) int {
		return cmp.Or(cmp.Compare(a.Zone, b.Zone), a.IssuedAt.Compare(b.IssuedAt))
	})
	zones := make([]string, len(us))
	issued := make([]time.Time, len(us))
	for i, u := range us {
		zones[i], issued[i] = string(u.Zone), u.IssuedAt.UTC()
	}
	return zones, issued
}

// dialect is PostgreSQL's SQL for sqlstore: strings ordered bytewise.
var dialect = sqlstore.Dialect{Collate: ` COLLATE "C"`, TextArray: "::text[]"}
