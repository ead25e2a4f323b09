// Package postgres is the time-series store (store.DB) on PostgreSQL, over
// pgx v5 and a pgxpool connection pool. It keeps three tables, which Migrate
// creates:
//
//	observed_signals(zone, signal, time, value, estimated, updated_at)
//	    primary key (zone, signal, time)
//	forecasts(zone, signal, model_name, model_version, issued_at, target_time, value, lower, upper)
//	    primary key (zone, signal, model_name, model_version, issued_at, target_time)
//	backfill_checkpoints(job, zone, issued_at, done_at)
//	    primary key (job, zone, issued_at)
//
// WriteForecasts is one transaction: the rows are copied (binary COPY) into
// a session-local staging table, upserted into forecasts with one INSERT …
// SELECT … ON CONFLICT, and the units recorded in backfill_checkpoints, so
// a failure anywhere (a database restart included) leaves none of the call
// visible. Rows are upserted in primary-key order, so concurrent writers of
// overlapping rows wait for each other instead of deadlocking.
//
// Errors are *forecast.Error values: EINVALID for bad input (checked before
// anything is sent), EUNAVAILABLE when the server cannot be reached, shuts
// down, times out or the tables are missing (run Migrate), ENOTFOUND as
// forecast.History documents; context errors stay in the chain.
package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/sqlstore"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// Timeouts applied when the caller's context has no deadline.
const (
	// ConnectTimeout bounds Open and establishing one connection
	// (connect_timeout in the URL overrides the latter).
	ConnectTimeout = pgwire.ConnectTimeout
	// DefaultTimeout bounds every call but the ones below.
	DefaultTimeout = pgwire.DefaultTimeout
	// WriteTimeout bounds WriteForecasts and UpsertObserved: large
	// batches are the caller's choice.
	WriteTimeout = store.WriteTimeout
	// ReadTimeout bounds ReadForecasts, which streams rows to a callback
	// that may be slow.
	ReadTimeout = store.ReadTimeout
)

// Store is a store.DB on one PostgreSQL database. Safe for concurrent use;
// Close it when done.
type Store struct {
	sqlstore.Reader[pgx.Rows] // Done, ReadForecasts
	pool                      *pgxpool.Pool
	staging                   stagingMode
}

var _ store.DB = (*Store)(nil)

// Open connects to the database at dsn (postgres://user:pass@host:port/db?…
// or a key=value DSN) and pings it. EINVALID (field "store") for a
// malformed dsn; EUNAVAILABLE when the server cannot be reached within
// ConnectTimeout or ctx's deadline; EUNAUTHORIZED when it refuses the
// credentials; ENOTFOUND when the database does not exist. The tables need
// not exist yet: Migrate creates them.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := backend.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &Store{
		Reader: sqlstore.Reader[pgx.Rows]{Query: pool.Query, Backend: backend, Dialect: dialect},
		pool:   pool, staging: stagingSession,
	}, nil
}

// backend is how this package's errors read and its pools are set up.
var backend = pgwire.Backend{
	Name:    "postgres store:",
	Field:   "store",
	Migrate: "run migrate to create the store's tables",
	Params: map[string]string{
		"application_name": "carbongate-store",
		// Room for a large staging batch in memory (the default is
		// 8MB); allocated only as used.
		"temp_buffers": "64MB",
	},
}

// Close closes the pool; calls after Close fail with EUNAVAILABLE.
func (s *Store) Close() { s.pool.Close() }
