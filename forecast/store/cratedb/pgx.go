package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/internal/pgwire"
)

// backend is how this package's errors read and its pools are set up.
var backend = pgwire.Backend{
	Name:    "cratedb store:",
	Field:   "store",
	Migrate: MigrateHint,
	CrateDB: true,
	Params:  map[string]string{"application_name": "carbongate-store"},
}

// Connect returns a pool for url without connecting yet. Statements
// without arguments (DDL, REFRESH TABLE) go over the simple query
// protocol, the others over the extended protocol; CrateDB serves both.
// No statement is wrapped in a transaction. EINVALID (field "store") for a
// malformed URL; the error does not repeat the URL, which may hold a
// password.
func Connect(ctx context.Context, url string) (*pgwire.Pool, error) {
	return backend.Connect(ctx, url)
}
