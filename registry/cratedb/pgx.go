package cratedb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/tracing"
	"github.com/carbongate/carbongate/registry"
)

// DefaultConnectTimeout bounds establishing one connection when the URL
// sets no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// Open connects to CrateDB at url, a PostgreSQL connection string such as
// postgres://crate@localhost:5432/doc (the database name is CrateDB's
// schema), checks the registry tables with CheckSchema and returns a Store
// that owns the pool. EINVALID for a malformed URL, EUNAVAILABLE when the
// server cannot be reached, ENOTFOUND when the tables are missing (run
// Migrate, i.e. `carbonctl registry migrate`).
func Open(ctx context.Context, url string, opts registry.Options) (*Store, error) {
	db, err := Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := CheckSchema(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	s, err := New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.close = db.Close
	return s, nil
}

// PGX is a DB over a pgx connection pool. Statements without arguments
// (REFRESH TABLE, DDL) go over the simple query protocol, the others over
// the extended protocol with cached prepared statements (pgx's default);
// CrateDB serves both. No statement is wrapped in a transaction.
type PGX struct {
	pool *pgxpool.Pool
}

var _ DB = (*PGX)(nil)

// Connect returns a pool for url without connecting yet (pgxpool connects
// on first use). EINVALID for a malformed URL; the error does not repeat
// the URL, which may hold a password.
func Connect(ctx context.Context, url string) (*PGX, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: "cratedb: malformed connection URL", Err: err}
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	cfg.ConnConfig.Tracer = tracing.QueryTracer() // nil while tracing is off
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: "cratedb: cannot configure connection pool", Err: err}
	}
	return &PGX{pool: pool}, nil
}

// Exec implements DB.
func (p *PGX) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := p.pool.Exec(ctx, sql, args...)
	if err != nil {
		return 0, markUnavailable(err)
	}
	return tag.RowsAffected(), nil
}

// Query implements DB.
func (p *PGX) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	rows, err := p.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, markUnavailable(err)
	}
	return pgxRows{rows}, nil
}

// Close closes the pool.
func (p *PGX) Close() { p.pool.Close() }

type pgxRows struct{ pgx.Rows }

func (r pgxRows) Err() error { return markUnavailable(r.Rows.Err()) }

// markUnavailable wraps errors of the connection (refused, reset, closed,
// timed out while connecting) with ErrUnavailable. Server errors
// (*pgconn.PgError) and context errors pass unchanged, and so do client
// errors such as an argument that cannot be encoded.
func markUnavailable(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
