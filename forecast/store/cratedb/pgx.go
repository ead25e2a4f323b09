package cratedb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/tracing"
)

// PGX is a DB over a pgx connection pool. Statements without arguments
// (DDL, REFRESH TABLE) go over the simple query protocol, the others over
// the extended protocol; CrateDB serves both. No statement is wrapped in a
// transaction.
type PGX struct {
	pool *pgxpool.Pool
}

var _ DB = (*PGX)(nil)

// Connect returns a pool for url without connecting yet. EINVALID (field
// "store") for a malformed URL; the error does not repeat the URL, which
// may hold a password.
func Connect(ctx context.Context, url string) (*PGX, error) {
	if strings.TrimSpace(url) == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "store", "missing CrateDB URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "store", Message: "invalid CrateDB URL", Err: err}
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	}
	cfg.ConnConfig.Tracer = tracing.QueryTracer() // nil while tracing is off
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "store", Message: "cannot configure the CrateDB connection pool", Err: err}
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

// markUnavailable wraps connection errors with ErrUnavailable; server
// errors and context errors pass unchanged.
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
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err) ||
		strings.Contains(err.Error(), "closed pool") {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
