// Package pgwire is the database plumbing of the four backends that speak
// the PostgreSQL wire protocol: registry/postgres, registry/cratedb,
// forecast/store/postgres and forecast/store/cratedb. It opens pgx pools
// with carbongate's defaults and deadlines, and turns every driver error
// into the domain vocabulary (*forecast.Error) with one classification
// (see Backend.Classify), so that the same fault has the same code on
// every backend and hence the same HTTP status, gRPC code and MLflow
// error_code.
//
// It sits in internal/ with the other cross-cutting utilities because
// both the registry and the forecast/store trees import it; it imports no
// layer above the forecast package (whose errors it returns) and is the
// backends' plumbing, not an API for other packages.
package pgwire

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/tracing"
)

// Timeouts applied when the caller's context has no deadline.
const (
	// ConnectTimeout bounds Open and establishing one connection
	// (connect_timeout in the URL overrides the latter).
	ConnectTimeout = 10 * time.Second
	// DefaultTimeout bounds one call of a backend.
	DefaultTimeout = 30 * time.Second
)

// WithTimeout gives ctx a deadline d away unless it has one.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// Backend describes one backend: how its errors read and how its pools
// are configured. The zero value works; each backend keeps one.
type Backend struct {
	// Name starts every message of a classified error ("postgres",
	// "cratedb store").
	Name string
	// Field names the URL in EINVALID errors ("url", "store").
	Field string
	// Migrate says how to create the tables; missing-table errors carry it.
	Migrate string
	// CrateDB: the server is CrateDB, which right after a restart may
	// answer for a moment that tables which exist are unknown;
	// missing-table errors say so too.
	CrateDB bool
	// Params are session parameters set unless the URL sets them
	// (application_name, temp_buffers).
	Params map[string]string
}

// ParseConfig parses url (postgres://user:pass@host:port/db?… or a
// key=value DSN) and fills the defaults: ConnectTimeout unless the URL sets
// connect_timeout, b.Params, and the query tracer (nil while tracing is
// off). EINVALID naming b.Field for an empty or malformed url; the error
// never repeats the password (pgconn redacts it).
func (b Backend) ParseConfig(url string) (*pgxpool.Config, error) {
	if strings.TrimSpace(url) == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, b.Field, "missing database URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: b.Field, Message: "invalid database URL", Err: err}
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	cfg.ConnConfig.Tracer = tracing.QueryTracer()
	for k, v := range b.Params {
		if _, ok := cfg.ConnConfig.RuntimeParams[k]; !ok {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	return cfg, nil
}

// Pool returns a pool for url without connecting yet (pgxpool connects on
// first use). Errors are those of ParseConfig.
func (b Backend) Pool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := b.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: b.Field, Message: "cannot configure the connection pool", Err: err}
	}
	return pool, nil
}

// Open returns a pool for url whose server answered a statement within
// ConnectTimeout (or ctx's deadline); the caller closes it. Errors are
// those of ParseConfig and of Classify: EUNAVAILABLE when the server
// cannot be reached, EUNAUTHORIZED when it refuses the credentials,
// ENOTFOUND when the database does not exist. SELECT 1 is the check,
// which PostgreSQL and CrateDB both answer.
func (b Backend) Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := b.Pool(ctx, url)
	if err != nil {
		return nil, err
	}
	ctx, cancel := WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if _, err := pool.Exec(ctx, "SELECT 1"); err != nil {
		pool.Close()
		return nil, b.Classify(ctx, "connect", err)
	}
	return pool, nil
}

// DB is a connection pool seen through two calls, as the CrateDB backends
// use it (no transactions, no COPY). Arguments are bound as $1, $2, …
// parameters; nothing of the caller's is spliced into the SQL text.
type DB interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Query runs a statement that returns rows.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
}

// Rows is a result set, read like pgx.Rows: Next, Scan, then Err; Close
// releases it and is safe to call more than once.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Pool is a DB over a pgx connection pool. Statements without arguments
// (DDL, REFRESH TABLE) go over the simple query protocol, the others over
// the extended protocol with cached prepared statements (pgx's default);
// CrateDB serves both. No statement is wrapped in a transaction. Its
// errors are pgx's, for Backend.Classify to read.
type Pool struct {
	pool *pgxpool.Pool
}

var _ DB = (*Pool)(nil)

// Connect returns a Pool for url without connecting yet; errors are those
// of Backend.Pool.
func (b Backend) Connect(ctx context.Context, url string) (*Pool, error) {
	pool, err := b.Pool(ctx, url)
	if err != nil {
		return nil, err
	}
	return Wrap(pool), nil
}

// Wrap returns a Pool over pool (from Backend.Open, say); closing it
// closes pool.
func Wrap(pool *pgxpool.Pool) *Pool { return &Pool{pool: pool} }

// Exec implements DB.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := p.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// Query implements DB.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	rows, err := p.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// Close closes the pool; calls after Close fail (EUNAVAILABLE once
// classified). Closing twice is harmless.
func (p *Pool) Close() { p.pool.Close() }
