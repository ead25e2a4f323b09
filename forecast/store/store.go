// Package store defines carbongate's time-series store: observed intensity
// per (zone, signal, hour) and backfilled forecasts keyed as in the
// architecture, forecasts(zone, signal, model_name, model_version,
// issued_at, target_time, value, lower, upper), plus the checkpoints that
// make backfills resumable.
//
// The PostgreSQL and CrateDB implementations live in the subpackages
// postgres and cratedb; Memory is an in-memory implementation for tests and
// the embedded mode.
package store

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// ForecastRow is one forecast hour of one issued forecast. Lower and Upper
// are NaN when the model gave no prediction interval.
type ForecastRow struct {
	Zone         forecast.Zone
	Signal       forecast.Signal
	ModelName    string
	ModelVersion string
	IssuedAt     time.Time // UTC, on the hour: history strictly before it was used
	TargetTime   time.Time // UTC, on the hour: the hour forecast
	Value        float64
	Lower        float64
	Upper        float64
}

// HasInterval reports whether the row carries a prediction interval.
func (r ForecastRow) HasInterval() bool { return !math.IsNaN(r.Lower) && !math.IsNaN(r.Upper) }

// Key identifies a forecast row: everything but the values.
type Key struct {
	Zone         forecast.Zone
	Signal       forecast.Signal
	ModelName    string
	ModelVersion string
	IssuedAt     time.Time
	TargetTime   time.Time
}

// Key returns the row's key.
func (r ForecastRow) Key() Key {
	return Key{r.Zone, r.Signal, r.ModelName, r.ModelVersion, r.IssuedAt.UTC(), r.TargetTime.UTC()}
}

// Unit is one unit of backfill work: the forecast of one zone issued at one
// time. A job's checkpoint is the set of units it has written.
type Unit struct {
	Zone     forecast.Zone
	IssuedAt time.Time
}

// ForecastQuery selects forecast rows. Empty fields select everything;
// IssuedFrom and IssuedTo bound issued_at as [IssuedFrom, IssuedTo).
type ForecastQuery struct {
	Zones        []forecast.Zone
	Signal       forecast.Signal
	ModelName    string
	ModelVersion string
	IssuedFrom   time.Time
	IssuedTo     time.Time
}

// Forecasts is the forecast store.
type Forecasts interface {
	// WriteForecasts upserts rows (a row whose Key is stored replaces it)
	// and records units as done for job. Either all of it becomes visible
	// or, on error, none of the rows of this call are half-written: on
	// PostgreSQL it is one transaction; on CrateDB (no transactions) rows
	// are written before the checkpoint, so a retry rewrites the same rows.
	WriteForecasts(ctx context.Context, job string, units []Unit, rows []ForecastRow) error
	// Done returns the units recorded for job.
	Done(ctx context.Context, job string) ([]Unit, error)
	// ReadForecasts calls fn for each row matching q, ordered by zone,
	// model_name, model_version, issued_at, target_time. fn's error stops
	// the read and is returned.
	ReadForecasts(ctx context.Context, q ForecastQuery, fn func(ForecastRow) error) error
}

// Observation is one observed hour: the mean intensity over the hour that
// starts at Time (UTC, on the hour).
type Observation struct {
	Time      time.Time
	Value     float64
	Estimated bool // the upstream estimated or imputed the value
}

// Observed is the observed-signals store. gateway/ingest adapts it to its
// Sink so the live pollers write into it; the gateway reads model history
// from it (forecast.History) in production mode.
type Observed interface {
	forecast.History
	// UpsertObserved stores hourly observations of zone's signal (sorted,
	// each Time once, values finite and ≥ 0); a stored (zone, signal,
	// Time) is replaced, so repeating a call is harmless. A bad point makes
	// the whole call EINVALID and nothing is stored.
	UpsertObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal, obs []Observation) error
	// LatestObserved returns the start of the latest stored hour of zone's
	// signal, and false when none is stored.
	LatestObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error)
	// Observed returns zone's signal over [from, to) as an hourly series
	// starting at from; hours without an observation are NaN.
	Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error)
}

// Timeouts the database stores (postgres, cratedb) apply when the caller's
// context has no deadline; every other call is bounded by
// internal/pgwire's DefaultTimeout.
const (
	// WriteTimeout bounds WriteForecasts and UpsertObserved: large
	// batches are the caller's choice.
	WriteTimeout = 5 * time.Minute
	// ReadTimeout bounds ReadForecasts, which streams rows to a callback
	// that may be slow.
	ReadTimeout = 30 * time.Minute
)

// DB is a store backed by a database (PostgreSQL or CrateDB); see the
// subpackage connect to open one by URL.
type DB interface {
	Forecasts
	Observed
	// Migrate creates the store's tables when absent; it never drops or
	// alters existing ones.
	Migrate(ctx context.Context) error
	// Close releases the connections.
	Close()
}
