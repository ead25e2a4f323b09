package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

// Open connects to CrateDB at url, a PostgreSQL connection string such as
// postgres://crate@localhost:5432/doc (the database name is CrateDB's
// schema), checks the registry tables with CheckSchema and returns a Store
// that owns the pool. EINVALID for a malformed URL, EUNAVAILABLE when the
// server cannot be reached or the tables are missing (run Migrate, i.e.
// `carbonctl registry migrate`), as on PostgreSQL.
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

// Connect returns a pool for url without connecting yet (pgxpool connects
// on first use). No statement is wrapped in a transaction. EINVALID for a
// malformed URL; the error does not repeat the URL, which may hold a
// password.
func Connect(ctx context.Context, url string) (*pgwire.Pool, error) {
	return backend.Connect(ctx, url)
}
