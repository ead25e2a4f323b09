package cratedb

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/sqlstore"
	"github.com/carbongate/carbongate/internal/pgwire"
)

var (
	forecastCols = []column{{"zone", "text[]"}, {"signal", "text[]"}, {"model_name", "text[]"}, {"model_version", "text[]"},
		{"issued_at", "timestamp with time zone[]"}, {"target_time", "timestamp with time zone[]"},
		{"value", "double precision[]"}, {"lower", "double precision[]"}, {"upper", "double precision[]"}}
	forecastKey    = names(forecastCols[:6])
	checkpointCols = []column{{"job", "text[]"}, {"zone", "text[]"}, {"issued_at", "timestamp with time zone[]"}}
)

// WriteForecasts implements store.Forecasts: the rows in upsert statements
// of at most MaxBatch rows, REFRESH TABLE forecasts, then the units
// (ON CONFLICT DO NOTHING), REFRESH TABLE backfill_checkpoints. Bad rows or
// units are EINVALID before anything is sent. Not atomic (CrateDB has no
// transactions): on error some batches may be stored but no unit is
// recorded before all rows are, so the caller retries the same call.
// Rows with the same key in one call: the last one wins.
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
	ctx, cancel := pgwire.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	rows = uniqueRows(rows)
	upsert := upsertClause(forecastKey, []string{"value", "lower", "upper"})
	for batch := range slices.Chunk(rows, s.maxBatch) {
		if _, err := s.db.Exec(ctx, insertSQL("forecasts", forecastCols, upsert), forecastArgs(batch)...); err != nil {
			return backend.Classify(ctx, "write forecasts", err)
		}
	}
	if len(rows) > 0 {
		if _, err := s.db.Exec(ctx, refresh("forecasts")); err != nil {
			return backend.Classify(ctx, "write forecasts", err)
		}
	}
	if len(units) == 0 {
		return nil
	}
	ignore := `ON CONFLICT ("job", "zone", "issued_at") DO NOTHING`
	for batch := range slices.Chunk(uniqueUnits(units), s.maxBatch) {
		jobs, zones, issued := make([]string, len(batch)), make([]string, len(batch)), make([]time.Time, len(batch))
		for i, u := range batch {
			jobs[i], zones[i], issued[i] = job, string(u.Zone), u.IssuedAt
		}
		if _, err := s.db.Exec(ctx, insertSQL("backfill_checkpoints", checkpointCols, ignore), jobs, zones, issued); err != nil {
			return backend.Classify(ctx, "write checkpoints", err)
		}
	}
	if _, err := s.db.Exec(ctx, refresh("backfill_checkpoints")); err != nil {
		return backend.Classify(ctx, "write checkpoints", err)
	}
	return nil
}

// forecastArgs returns the arrays of forecastCols for rows: lower and
// upper hold NULL for rows without an interval.
func forecastArgs(rows []store.ForecastRow) []any {
	n := len(rows)
	zone, signal, name, version := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	issued, target := make([]time.Time, n), make([]time.Time, n)
	value, bounds := make([]float64, n), make([]float64, 2*n)
	lower, upper := make([]*float64, n), make([]*float64, n)
	for i, r := range rows {
		zone[i], signal[i], name[i], version[i] = string(r.Zone), string(r.Signal), r.ModelName, r.ModelVersion
		issued[i], target[i], value[i] = r.IssuedAt.UTC(), r.TargetTime.UTC(), r.Value
		if r.HasInterval() {
			bounds[2*i], bounds[2*i+1] = r.Lower, r.Upper
			lower[i], upper[i] = &bounds[2*i], &bounds[2*i+1]
		}
	}
	return []any{zone, signal, name, version, issued, target, value, lower, upper}
}

func compareKeys(a, b *store.ForecastRow) int {
	return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Signal, b.Signal),
		cmp.Compare(a.ModelName, b.ModelName), cmp.Compare(a.ModelVersion, b.ModelVersion),
		a.IssuedAt.Compare(b.IssuedAt), a.TargetTime.Compare(b.TargetTime))
}

// uniqueRows returns rows in key order, one per key (the last given): one
// statement must not name a key twice.
func uniqueRows(rows []store.ForecastRow) []store.ForecastRow {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b store.ForecastRow) int { return compareKeys(&a, &b) })
	w := 0
	for i := range out {
		if i+1 < len(out) && compareKeys(&out[i], &out[i+1]) == 0 {
			continue
		}
		out[w] = out[i]
		w++
	}
	return out[:w]
}

// uniqueUnits returns units in (zone, issued_at) order, each once.
func uniqueUnits(units []store.Unit) []store.Unit {
	out := make([]store.Unit, len(units))
	for i, u := range units {
		out[i] = store.Unit{Zone: u.Zone, IssuedAt: u.IssuedAt.UTC()}
	}
	slices.SortFunc(out, func(a, b store.Unit) int {
		return cmp.Or(cmp.Compare(a.Zone, b.Zone), a.IssuedAt.Compare(b.IssuedAt))
	})
	return slices.CompactFunc(out, func(a, b store.Unit) bool { return a.Zone == b.Zone && a.IssuedAt.Equal(b.IssuedAt) })
}

// dialect is CrateDB's SQL for sqlstore: identifiers quoted.
var dialect = sqlstore.Dialect{Quote: true}
