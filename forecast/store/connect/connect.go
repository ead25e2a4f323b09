// Package connect opens the time-series store (store.DB) a URI names, the
// one place that knows every backend:
//
//	postgres://… or postgresql://…   forecast/store/postgres
//	crate://host:port/schema?…       forecast/store/cratedb, over CrateDB's
//	                                  PostgreSQL wire protocol ("crate" is
//	                                  replaced by "postgres" for the driver;
//	                                  CrateDB listens on 5432 by default)
package connect

import (
	"context"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/cratedb"
	"github.com/carbongate/carbongate/forecast/store/postgres"
)

// Kind names the backend a URI selects.
type Kind string

// Backends.
const (
	Postgres Kind = "postgres"
	CrateDB  Kind = "cratedb"
)

// Parse returns the backend uri selects and the address its driver takes.
// EINVALID naming "store" for an empty URI or another scheme.
func Parse(uri string) (Kind, string, error) {
	switch {
	case strings.TrimSpace(uri) == "":
		return "", "", forecast.FieldErrorf(forecast.EINVALID, "store", "store URI is empty")
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return Postgres, uri, nil
	case strings.HasPrefix(uri, "crate://"):
		return CrateDB, "postgres://" + strings.TrimPrefix(uri, "crate://"), nil
	}
	return "", "", forecast.FieldErrorf(forecast.EINVALID, "store", "store URI %q: use postgres://, postgresql:// or crate://", forecast.RedactURI(uri))
}

// Open opens and pings the store uri names; the caller closes it. The
// tables need not exist: call Migrate on the result to create them. Errors
// are those of Parse and of the backend's Open (EINVALID, EUNAVAILABLE,
// EUNAUTHORIZED, ENOTFOUND).
func Open(ctx context.Context, uri string) (store.DB, error) {
	kind, addr, err := Parse(uri)
	if err != nil {
		return nil, err
	}
	if kind == CrateDB {
		return cratedb.Open(ctx, addr)
	}
	return postgres.Open(ctx, addr)
}
