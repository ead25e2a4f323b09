// Package sqlstore is what the SQL time-series stores (forecast/store/
// postgres, forecast/store/cratedb) share: the queries that read forecasts
// and checkpoints, and the scanning of their rows. What differs between
// the backends' SQL is a Dialect.
package sqlstore

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// Dialect is what differs between backends' SQL.
type Dialect struct {
	// Quote double-quotes identifiers (CrateDB).
	Quote bool
	// Collate follows each text column of an ORDER BY, so that strings
	// compare bytewise whatever the database's collation (` COLLATE "C"` on
	// PostgreSQL; CrateDB compares bytewise already).
	Collate string
	// TextArray casts a text array parameter ("::text[]" on PostgreSQL).
	TextArray string
}

func (d Dialect) ident(name string) string {
	if d.Quote {
		return `"` + name + `"`
	}
	return name
}

// orderBy renders ORDER BY over cols; text columns get d.Collate.
func (d Dialect) orderBy(cols ...string) string {
	terms := make([]string, len(cols))
	for i, c := range cols {
		terms[i] = d.ident(c)
		if c != "issued_at" && c != "target_time" {
			terms[i] += d.Collate
		}
	}
	return " ORDER BY " + strings.Join(terms, ", ")
}

// forecastCols are the columns ForecastQuery selects, in the order
// EachForecast scans them.
var forecastCols = []string{"zone", "signal", "model_name", "model_version", "issued_at", "target_time", "value", "lower", "upper"}

// ForecastQuery builds the SELECT of q with its arguments, ordered by zone,
// model_name, model_version, issued_at, target_time, signal.
func (d Dialect) ForecastQuery(q store.ForecastQuery) (string, []any) {
	var where []string
	var args []any
	add := func(col, op string, arg any) {
		args = append(args, arg)
		p := "$" + strconv.Itoa(len(args))
		if op == "ANY" {
			where = append(where, d.ident(col)+" = ANY("+p+d.TextArray+")")
			return
		}
		where = append(where, d.ident(col)+" "+op+" "+p)
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
		cols[i] = d.ident(c)
	}
	sql := "SELECT " + strings.Join(cols, ", ") + " FROM " + d.ident("forecasts")
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	return sql + d.orderBy("zone", "model_name", "model_version", "issued_at", "target_time", "signal"), args
}

// EachForecast scans rows of ForecastQuery into fn, times in UTC, the
// interval NaN when either bound is NULL. A scan or read error goes
// through classify; fn's error is returned as it is.
func EachForecast(rows pgwire.Rows, classify func(error) error, fn func(store.ForecastRow) error) error {
	defer rows.Close()
	for rows.Next() {
		var (
			zone, signal string
			r            store.ForecastRow
			lower, upper *float64
		)
		if err := rows.Scan(&zone, &signal, &r.ModelName, &r.ModelVersion, &r.IssuedAt, &r.TargetTime, &r.Value, &lower, &upper); err != nil {
			return classify(err)
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
	return classify(rows.Err())
}

// DoneQuery is the SELECT of a job's checkpoints ($1), ordered by zone
// then issue time; Units scans its rows.
func (d Dialect) DoneQuery() string {
	return "SELECT " + d.ident("zone") + ", " + d.ident("issued_at") + " FROM " + d.ident("backfill_checkpoints") +
		" WHERE " + d.ident("job") + " = $1" + d.orderBy("zone", "issued_at")
}

// Units scans rows of DoneQuery, times in UTC; empty (not nil) when there
// are none.
func Units(rows pgwire.Rows) ([]store.Unit, error) {
	defer rows.Close()
	out := []store.Unit{}
	for rows.Next() {
		var zone string
		var at time.Time
		if err := rows.Scan(&zone, &at); err != nil {
			return nil, err
		}
		out = append(out, store.Unit{Zone: forecast.Zone(zone), IssuedAt: at.UTC()})
	}
	return out, rows.Err()
}

// Reader implements store.Forecasts' reads (Done, ReadForecasts) for a
// backend: Query runs a statement, Backend classifies its errors, Dialect
// spells the SQL. A store embeds it.
type Reader[R pgwire.Rows] struct {
	Query   func(ctx context.Context, sql string, args ...any) (R, error)
	Backend pgwire.Backend
	Dialect Dialect
}

// Done implements store.Forecasts: job's units ordered by zone then issue
// time, in UTC; empty (not nil) when the job has none.
func (r Reader[R]) Done(ctx context.Context, job string) ([]store.Unit, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, pgwire.DefaultTimeout)
	defer cancel()
	rows, err := r.Query(ctx, r.Dialect.DoneQuery(), job)
	if err != nil {
		return nil, r.Backend.Classify(ctx, "read checkpoints", err)
	}
	out, err := Units(rows)
	return out, r.Backend.Classify(ctx, "read checkpoints", err)
}

// ReadForecasts implements store.Forecasts. Rows are streamed from the
// server as fn consumes them, ordered by zone, model_name, model_version,
// issued_at, target_time (then signal), strings compared bytewise.
func (r Reader[R]) ReadForecasts(ctx context.Context, q store.ForecastQuery, fn func(store.ForecastRow) error) error {
	ctx, cancel := pgwire.WithTimeout(ctx, store.ReadTimeout)
	defer cancel()
	sql, args := r.Dialect.ForecastQuery(q)
	rows, err := r.Query(ctx, sql, args...)
	if err != nil {
		return r.Backend.Classify(ctx, "read forecasts", err)
	}
	return EachForecast(rows, func(err error) error { return r.Backend.Classify(ctx, "read forecasts", err) }, fn)
}
