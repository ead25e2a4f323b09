// Package postgres is the registry.Store on PostgreSQL (pgx/v5), in
// MLflow's own table layout — registered_models, model_versions,
// registered_model_tags, model_version_tags, registered_model_aliases and
// alembic_version — so a real MLflow server (2.x, 3.x) and carbongate can
// share one database. It detects the layout instead of assuming one MLflow
// version: from MLflow 3.10 on every key carries a workspace column, and
// carbongate then works in workspace 'default'.
//
// Semantics follow MLflow's SQLAlchemy store: version numbers are the
// highest existing one (soft-deleted included) + 1, allocated under a row
// lock on the registered model and retried on a unique violation (an MLflow
// server writing the same table takes no lock); deleting a version is soft
// (current_stage 'Deleted_Internal', fields redacted, its aliases removed,
// its tags kept as MLflow keeps them); deleting a model removes everything
// it owns.
//
// Migrate creates the tables for a carbongate-only database and installs
// the trigger behind WatchAliases (LISTEN/NOTIFY on
// registered_model_aliases); it never alters tables MLflow created.
//
// Errors are *forecast.Error values: ENOTFOUND, ECONFLICT (unique
// violation), EINVALID (bad input, a value longer than its column),
// EUNAVAILABLE (server unreachable, shutting down, or tables missing);
// context errors stay in the chain.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/tracing"
	"github.com/carbongate/carbongate/registry"
)

// Timeouts applied when the caller's context has none.
const (
	// DefaultTimeout bounds every Store call.
	DefaultTimeout = 30 * time.Second
	// ConnectTimeout bounds establishing one connection (connect_timeout
	// in the URL overrides it).
	ConnectTimeout = 10 * time.Second
)

// Store is a registry.Store and registry.Notifier on one PostgreSQL
// database. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time

	mu  sync.Mutex
	lay *layout // detected on first use; nil until the tables exist

	// Watchers run on connections of their own, ended by Close.
	watchCtx  context.Context
	stopWatch context.CancelFunc
	watchers  sync.WaitGroup
}

var (
	_ registry.Store    = (*Store)(nil)
	_ registry.Notifier = (*Store)(nil)
)

// Open connects to the database at url (postgres://user:pass@host:port/db?…
// or a key=value DSN) and checks that the server answers. EINVALID for a
// malformed url, EUNAVAILABLE when the server cannot be reached within
// ConnectTimeout (or ctx), EUNAUTHORIZED when it rejects the credentials,
// ENOTFOUND when the database does not exist. The tables need not exist
// yet: Schema reports them, Migrate creates them, and every other call
// fails with EUNAVAILABLE until they do.
func Open(ctx context.Context, url string, o registry.Options) (*Store, error) {
	cfg, err := parseConfig(url)
	if err != nil {
		return nil, err
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
	s := &Store{pool: pool, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	s.watchCtx, s.stopWatch = context.WithCancel(context.Background())
	return s, nil
}

func parseConfig(url string) (*pgxpool.Config, error) {
	if strings.TrimSpace(url) == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "url", "missing database URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn redacts the password in its parse errors.
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "url", Message: "invalid database URL", Err: err}
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	cfg.ConnConfig.Tracer = tracing.QueryTracer() // nil while tracing is off
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "carbongate"
	}
	return cfg, nil
}

// Close ends the watchers and closes the pool; calls after Close fail with
// EUNAVAILABLE.
func (s *Store) Close() error {
	s.mu.Lock()
	s.stopWatch()
	s.mu.Unlock()
	s.watchers.Wait()
	s.pool.Close()
	return nil
}

// withTimeout gives ctx a deadline d away unless it has one.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// querier is what pgxpool.Pool and pgx.Tx have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// read runs fn on the pool with the detected layout.
func (s *Store) read(ctx context.Context, what string, fn func(ctx context.Context, q querier, l layout) error) error {
	ctx, cancel := withTimeout(ctx, DefaultTimeout)
	defer cancel()
	l, err := s.layout(ctx)
	if err != nil {
		return err
	}
	return s.classify(ctx, what, fn(ctx, s.pool, l))
}

// write runs fn in a transaction: committed when fn returns nil, rolled
// back otherwise, so a failed write leaves nothing behind.
func (s *Store) write(ctx context.Context, what string, fn func(ctx context.Context, tx pgx.Tx, l layout) error) error {
	ctx, cancel := withTimeout(ctx, DefaultTimeout)
	defer cancel()
	l, err := s.layout(ctx)
	if err != nil {
		return err
	}
	return s.classify(ctx, what, pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return fn(ctx, tx, l) }))
}

// classify maps err and forgets the layout when the tables changed under
// us (an MLflow upgrade), so the next call detects it again.
func (s *Store) classify(ctx context.Context, what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "42703") {
		s.mu.Lock()
		s.lay = nil
		s.mu.Unlock()
	}
	return classify(ctx, what, err)
}

// classify turns a driver error into a *forecast.Error; errors that
// already are one pass through.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var fe *forecast.Error
	if errors.As(err, &fe) && fe == err {
		return err
	}
	msg := "postgres " + what
	if cerr := ctx.Err(); cerr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": timed out or canceled", Err: err}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &forecast.Error{Code: forecast.ENOTFOUND, Message: msg + ": not found", Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &forecast.Error{Code: sqlstateCode(pe.Code), Message: msg + ": " + pe.Message, Err: err}
	}
	if unreachable(err) {
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": database unreachable", Err: err}
	}
	return &forecast.Error{Code: forecast.EINTERNAL, Message: msg + " failed", Err: err}
}

// sqlstateCode maps a SQLSTATE to an error code.
func sqlstateCode(code string) string {
	switch {
	case code == "23505": // unique_violation
		return forecast.ECONFLICT
	case code == "23503": // foreign_key_violation: the parent is gone
		return forecast.ENOTFOUND
	case code == "3D000": // invalid_catalog_name: no such database
		return forecast.ENOTFOUND
	case code == "40001" || code == "40P01": // serialization failure, deadlock
		return forecast.ECONFLICT
	case code == "22001" || code == "22003" || code == "22P02": // too long, out of range, bad text
		return forecast.EINVALID
	case code == "42P01" || code == "42703": // table or column vanished
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

// nullIfEmpty stores "" as NULL, as MLflow stores an absent field.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
