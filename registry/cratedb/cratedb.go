// Package cratedb is a registry.Store on CrateDB, spoken to over the
// PostgreSQL wire protocol. It uses the registry tables of the
// mlflow-cratedb project (same names, columns and types) with primary keys
// added, and follows CrateDB's rules instead of PostgreSQL's:
//
//   - No transactions: BEGIN and COMMIT are ignored and ROLLBACK is an
//     error, so no statement of this package opens, commits or rolls back a
//     transaction. Writes that touch several rows are ordered so that a
//     failure part-way leaves the least visible damage (see each method).
//   - No sequences, UNIQUE constraints or SELECT ... FOR UPDATE: version
//     numbers are allocated by an optimistic INSERT that the primary key
//     (name, version) rejects when another writer took the number first.
//   - Eventual consistency: a statement sees other statements' writes only
//     after REFRESH TABLE, except lookups by the full primary key. Every
//     write is followed by REFRESH TABLE on the tables it touched before any
//     read that is not such a lookup; reads that follow a write in the same
//     operation are primary-key lookups.
//   - Primary-key columns cannot be updated, so RenameModel is refused.
//   - Every error carries SQLSTATE XX000 on older servers, so errors are
//     recognised by message (see classify).
//
// Errors are *forecast.Error values with the codes registry.Store documents;
// context errors stay in the chain.
package cratedb

import (
	"context"
	"errors"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

// DB is the part of a CrateDB connection pool the Store uses: Exec and
// Query, arguments bound as $1, $2, ... parameters, nothing of the
// caller's ever spliced into the SQL text. *pgwire.Pool (Connect) is one.
type DB = pgwire.DB

// Rows is a result set, read like pgx.Rows.
type Rows = pgwire.Rows

// DefaultTimeout bounds each Store call whose context has no deadline.
const DefaultTimeout = pgwire.DefaultTimeout

// MaxVersionAttempts bounds the optimistic updates of a model version
// (UpdateVersion, TransitionStage, DeleteVersion): after that many lost
// races in a row the call returns ECONFLICT.
const MaxVersionAttempts = 10

// MaxVersionInserts bounds the inserts one CreateVersion tries. Each
// duplicate-key rejection means another registration of the model got
// that number, so a call tries at most one number more than there are
// registrations running beside it: 50 concurrent registrations of one
// model all succeed (the conformance suite's race), on a live server too.
// The bound, and the call's deadline, only stop a runaway; reaching it is
// ECONFLICT.
const MaxVersionInserts = 1000

// Store is a registry.Store on CrateDB. It is safe for concurrent use.
type Store struct {
	db         DB
	now        func() time.Time
	close      func()
	maxInserts int // MaxVersionInserts; tests lower it
}

var _ registry.Store = (*Store)(nil)

// New returns a Store over db, which the caller owns (Close does not close
// it). The schema is not checked; see CheckSchema.
func New(db DB, opts registry.Options) (*Store, error) {
	if db == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "cratedb: no database connection")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now, maxInserts: MaxVersionInserts}, nil
}

// Close releases the connection pool when the Store was made by Open.
func (s *Store) Close() error {
	if s.close != nil {
		s.close()
	}
	return nil
}

// bound applies DefaultTimeout when ctx has no deadline.
func bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return pgwire.WithTimeout(ctx, DefaultTimeout)
}

// millis is the Store clock in Unix milliseconds, as MLflow stores times.
func (s *Store) millis() int64 { return s.now().UnixMilli() }

// exec runs a statement and classifies its error.
func (s *Store) exec(ctx context.Context, what, sql string, args ...any) (int64, error) {
	n, err := s.db.Exec(ctx, sql, args...)
	if err != nil {
		return 0, backend.Classify(ctx, what, err)
	}
	return n, nil
}

// refresh makes the rows written to tables visible to every statement that
// follows, not only to primary-key lookups.
func (s *Store) refresh(ctx context.Context, tables ...string) error {
	sql := "REFRESH TABLE "
	for i, t := range tables {
		if i > 0 {
			sql += ", "
		}
		sql += t
	}
	_, err := s.exec(ctx, "refresh "+tables[0], sql)
	return err
}

// query runs a statement and calls each once per row with a function that
// scans the current row.
func (s *Store) query(ctx context.Context, what string, each func(scan func(dest ...any) error) error, sql string, args ...any) error {
	rows, err := s.db.Query(ctx, sql, args...)
	if err != nil {
		return backend.Classify(ctx, what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return scanError(ctx, what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return backend.Classify(ctx, what, err)
	}
	return nil
}

// scanError keeps *forecast.Error values from each and reports anything
// else (a column that does not fit its Go type) as EINTERNAL.
func scanError(ctx context.Context, what string, err error) error {
	var fe *forecast.Error
	if errors.As(err, &fe) {
		return err
	}
	if ctx.Err() != nil {
		return backend.Classify(ctx, what, err)
	}
	return &forecast.Error{Code: forecast.EINTERNAL, Message: "cratedb " + what + ": unexpected row", Err: err}
}

// str and num turn nullable columns into Go zero values.
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func num(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// opt writes an empty optional field as NULL, as MLflow leaves unset
// fields, so that MLflow clients reading the row see them unset.
func opt(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// validVersion checks a version number argument.
func validVersion(v int64) error {
	if v < 1 {
		return forecast.FieldErrorf(forecast.EINVALID, "version", "version %d is not a version number", v)
	}
	return nil
}
