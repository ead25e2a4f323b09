// Package cratedb is the time-series store (store.DB) on CrateDB, spoken to
// over the PostgreSQL wire protocol with pgx v5. It keeps the tables of
// forecast/store/postgres (observed_signals, forecasts,
// backfill_checkpoints, same columns and primary keys) and follows
// CrateDB's rules instead of PostgreSQL's:
//
//   - No transactions (BEGIN and COMMIT are ignored, ROLLBACK is an error)
//     and no COPY FROM STDIN: writes are INSERT … SELECT * FROM
//     UNNEST(one array per column) ON CONFLICT (primary key) DO UPDATE
//     statements of at most MaxBatch rows. A call that fails part-way may leave earlier batches stored;
//     every write is an upsert, so retrying the call is harmless.
//     WriteForecasts writes the rows before the checkpoints, so a unit is
//     recorded done only once its rows are stored.
//   - Reads see writes only after REFRESH TABLE: every write call ends by
//     refreshing the tables it wrote.
//   - Errors come with SQLSTATE XX000 on most servers, so they are told
//     apart by message (see classify).
//
// Status: the SQL it sends is pinned by golden tests, and the forecast-store
// conformance suite runs on a live CrateDB 6.4.3 in make test
// (TestConformanceLive). See README.md.
package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/sqlstore"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// MaxBatch is the most rows one INSERT statement carries. Larger
// statements load faster up to about this size (a 96 h forecast of 104
// issue times), and the server holds a statement's arrays in memory.
const MaxBatch = 10_000

// Timeouts applied when the caller's context has no deadline.
const (
	// ConnectTimeout bounds Open and establishing one connection.
	ConnectTimeout = pgwire.ConnectTimeout
	// DefaultTimeout bounds every call but the ones below.
	DefaultTimeout = pgwire.DefaultTimeout
	// WriteTimeout bounds WriteForecasts and UpsertObserved.
	WriteTimeout = store.WriteTimeout
	// ReadTimeout bounds ReadForecasts, which streams rows to a callback.
	ReadTimeout = store.ReadTimeout
)

// DB is the part of a CrateDB connection pool the Store uses: Exec and
// Query, arguments bound as $1, $2, … parameters, nothing of the caller's
// spliced into the SQL text. *pgwire.Pool (Connect) is one.
type DB = pgwire.DB

// Rows is a result set, read like pgx.Rows.
type Rows = pgwire.Rows

// Store is a store.DB on CrateDB. Safe for concurrent use.
type Store struct {
	sqlstore.Reader[pgwire.Rows] // Done, ReadForecasts
	db                           DB
	close                        func()
	maxBatch                     int
}

var _ store.DB = (*Store)(nil)

// New returns a Store over db, which the caller owns: Close does nothing.
func New(db DB) (*Store, error) {
	if db == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "cratedb store: no database connection")
	}
	return &Store{
		Reader: sqlstore.Reader[pgwire.Rows]{Query: db.Query, Backend: backend, Dialect: dialect},
		db:     db, close: func() {}, maxBatch: MaxBatch,
	}, nil
}

// Open connects to CrateDB at url, a PostgreSQL connection string such as
// postgres://crate@localhost:5432/doc (the database name is CrateDB's
// schema), checks that it answers, and returns a Store owning the pool.
// EINVALID (field "store") for a malformed url; EUNAVAILABLE when the
// server cannot be reached within ConnectTimeout or ctx's deadline. The
// tables need not exist: Migrate creates them.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := backend.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	p := pgwire.Wrap(pool)
	s, _ := New(p)
	s.close = p.Close
	return s, nil
}

// Close closes the pool Open made.
func (s *Store) Close() { s.close() }
