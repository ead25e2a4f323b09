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
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/tracing"
)

// Timeouts applied when the caller's context has no deadline.
const (
	// ConnectTimeout bounds Open and establishing one connection
	// (connect_timeout in the URL overrides the latter).
	ConnectTimeout = 10 * time.Second
	// DefaultTimeout bounds every call but the ones below.
	DefaultTimeout = 30 * time.Second
	// WriteTimeout bounds WriteForecasts and UpsertObserved: large
	// batches are the caller's choice.
	WriteTimeout = 5 * time.Minute
	// ReadTimeout bounds ReadForecasts, which streams rows to a callback
	// that may be slow.
	ReadTimeout = 30 * time.Minute
)

// Store is a store.DB on one PostgreSQL database. Safe for concurrent use;
// Close it when done.
type Store struct {
	pool    *pgxpool.Pool
	staging stagingMode
}

var _ store.DB = (*Store)(nil)

// Open connects to the database at dsn (postgres://user:pass@host:port/db?…
// or a key=value DSN) and pings it. EINVALID (field "store") for a
// malformed dsn; EUNAVAILABLE when the server cannot be reached within
// ConnectTimeout or ctx's deadline; EUNAUTHORIZED when it refuses the
// credentials; ENOTFOUND when the database does not exist. The tables need
// not exist yet: Migrate creates them.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "store", "missing database URL")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgconn redacts the password in its parse errors.
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "store", Message: "invalid PostgreSQL URL", Err: err}
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	cfg.ConnConfig.Tracer = tracing.QueryTracer() // nil while tracing is off
	for k, v := range map[string]string{
		"application_name": "carbongate-store",
		// Room for a large staging batch in memory (the default is
		// 8MB); allocated only as used.
		"temp_buffers": "64MB",
	} {
		if _, ok := cfg.ConnConfig.RuntimeParams[k]; !ok {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	ctx, cancel := withTimeout(ctx, ConnectTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify(ctx, "connect", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, classify(ctx, "connect", err)
	}
	return &Store{pool: pool, staging: stagingSession}, nil
}

// Close closes the pool; calls after Close fail with EUNAVAILABLE.
func (s *Store) Close() { s.pool.Close() }

// withTimeout gives ctx a deadline d away unless it has one.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// classify turns a driver error into a *forecast.Error keeping it as the
// cause; *forecast.Error values pass through.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var fe *forecast.Error
	if errors.As(err, &fe) {
		return err
	}
	msg := "postgres store: " + what
	if cerr := ctx.Err(); cerr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if cerr != nil && !errors.Is(err, cerr) {
			err = errors.Join(cerr, err)
		}
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": timed out or canceled", Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		code := sqlstateCode(pe.Code)
		m := msg + ": " + pe.Message
		if pe.Code == "42P01" {
			m += " (run migrate to create the store's tables)"
		}
		return &forecast.Error{Code: code, Message: m, Err: err}
	}
	if unreachable(err) {
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": database unreachable", Err: err}
	}
	return &forecast.Error{Code: forecast.EINTERNAL, Message: msg + " failed", Err: err}
}

// sqlstateCode maps a SQLSTATE to an error code.
func sqlstateCode(code string) string {
	switch {
	case code == "3D000": // invalid_catalog_name: no such database
		return forecast.ENOTFOUND
	case code == "23505", code == "40001", code == "40P01": // unique violation, serialization failure, deadlock
		return forecast.ECONFLICT
	case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "23"): // data exception, integrity constraint
		return forecast.EINVALID
	case code == "42P01", code == "42703": // table or column missing: not migrated
		return forecast.EUNAVAILABLE
	case strings.HasPrefix(code, "28"): // invalid authorization
		return forecast.EUNAUTHORIZED
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"), strings.HasPrefix(code, "57P"):
		// connection exception, insufficient resources, shutdown/restart
		return forecast.EUNAVAILABLE
	}
	return forecast.EINTERNAL
}

// unreachable reports whether err means the server cannot be talked to.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "closed pool")
}
