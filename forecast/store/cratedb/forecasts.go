package cratedb

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/pgwire"
	"github.com/carbongate/carbongate/forecast/store"
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

// Done implements store.Forecasts: job's units ordered by zone then issue
// time, in UTC; empty (not nil) when none.
func (s *Store) Done(ctx context.Context, job string) ([]store.Unit, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	rows, err := s.db.Query(ctx, `SELECT "zone", "issued_at" FROM "backfill_checkpoints" WHERE "job" = $1 ORDER BY "zone", "issued_at"`, job)
	if err != nil {
		return nil, backend.Classify(ctx, "read checkpoints", err)
	}
	defer rows.Close()
	out := []store.Unit{}
	for rows.Next() {
		var zone string
		var at time.Time
		if err := rows.Scan(&zone, &at); err != nil {
			return nil, backend.Classify(ctx, "read checkpoints", err)
		}
		out = append(out, store.Unit{Zone: forecast.Zone(zone), IssuedAt: at.UTC()})
	}
	if err := rows.Err(); err != nil {
		return nil, backend.Classify(ctx, "read checkpoints", err)
	}
	return out, nil
}

// ReadForecasts implements store.Forecasts, streaming rows to fn ordered
// by zone, model_name, model_version, issued_at, target_time, signal.
func (s *Store) ReadForecasts(ctx context.Context, q store.ForecastQuery, fn func(store.ForecastRow) error) error {
	ctx, cancel := pgwire.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	sql, args := forecastQuery(q)
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return backend.Classify(ctx, "read forecasts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			zone, signal string
			r            store.ForecastRow
			lower, upper *float64
		)
		if err := rows.Scan(&zone, &signal, &r.ModelName, &r.ModelVersion, &r.IssuedAt, &r.TargetTime, &r.Value, &lower, &upper); err != nil {
			return backend.Classify(ctx, "read forecasts", err)
		}
		r.Zone, r.Signal = forecast.Zone(zone), forecast.Signal(signal)
		r.IssuedAt, r.TargetTime = r.IssuedAt.UTC(), r.TargetTime.UTC()
		r.Lower, r.Upper = math.NaN(), math.NaN()
		if lower != nil && upper != nil {
			r.Lower, r.Upper = *lower, *upper
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return backend.Classify(ctx, "read forecasts", rows.Err())
}

// forecastQuery builds the SELECT of q with its arguments.
func forecastQuery(q store.ForecastQuery) (string, []any) {
	var where []string
	var args []any
	add := func(col, op string, arg any) {
		args = append(args, arg)
		p := "$" + strconv.Itoa(len(args))
		if op == "ANY" {
			where = append(where, quote(col)+" = ANY("+p+")")
			return
		}
		where = append(where, quote(col)+" "+op+" "+p)
	}
	if len(q.Zones) > 0 {
		zones := make([]string, len(q.Zones))
		for i, z := range q.Zones {
			zones[i] = string(z)
		}
		add("zone", "ANY", zones)
	}
	if q.Signal != "" {
		add("signal", "=", string(q.Signal))
	}
	if q.ModelName != "" {
		add("model_name", "=", q.ModelName)
	}
	if q.ModelVersion != "" {
		add("model_version", "=", q.ModelVersion)
	}
	if !q.IssuedFrom.IsZero() {
		add("issued_at", ">=", q.IssuedFrom.UTC())
	}
	if !q.IssuedTo.IsZero() {
		add("issued_at", "<", q.IssuedTo.UTC())
	}
	cols := make([]string, len(forecastCols))
	for i, c := range forecastCols {
		cols[i] = quote(c.name)
	}
	sql := "SELECT " + strings.Join(cols, ", ") + ` FROM "forecasts"`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	return sql + ` ORDER BY "zone", "model_name", "model_version", "issued_at", "target_time", "signal"`, args
}
