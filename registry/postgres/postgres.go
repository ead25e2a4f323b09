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
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

// Timeouts applied when the caller's context has none.
const (
	// DefaultTimeout bounds every Store call.
	DefaultTimeout = pgwire.DefaultTimeout
	// ConnectTimeout bounds establishing one connection (connect_timeout
	// in the URL overrides it).
	ConnectTimeout = pgwire.ConnectTimeout
)

// backend is how this package's errors read and its pools are set up.
var backend = pgwire.Backend{
	Name:    "postgres",
	Field:   "url",
	Migrate: "run `carbonctl registry migrate`, or point carbongate at MLflow's database",
	Params:  map[string]string{"application_name": "carbongate"},
}

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
	pool, err := backend.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	s.watchCtx, s.stopWatch = context.WithCancel(context.Background())
	return s, nil
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

// querier is what pgxpool.Pool and pgx.Tx have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// read runs fn on the pool with the detected layout.
func (s *Store) read(ctx context.Context, what string, fn func(ctx context.Context, q querier, l layout) error) error {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
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
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
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
	return backend.Classify(ctx, what, err)
}

// nullIfEmpty stores "" as NULL, as MLflow stores an absent field.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
