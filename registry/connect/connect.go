// Package connect opens a registry.Store from a URI, the one place that
// knows every backend:
//
//	postgres://… or postgresql://…   registry/postgres (MLflow's tables)
//	crate://host:port/…               registry/cratedb (PG wire protocol; "crate" is
//	                                  replaced by "postgres" for the driver)
//	file:PATH, file:///PATH or PATH   registry/embedded (one file)
//	http://… or https://…             registry/mlflowclient: any MLflow-compatible
//	                                  registry server (carbongate, MLflow), with the
//	                                  bearer token of $MLFLOW_TRACKING_TOKEN
package connect

import (
	"context"
	"os"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/cratedb"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/registry/mlflowclient"
	"github.com/carbongate/carbongate/registry/postgres"
)

// Kind names the backend a URI selects.
type Kind string

// Backends.
const (
	Postgres Kind = "postgres"
	CrateDB  Kind = "cratedb"
	Embedded Kind = "embedded"
	MLflow   Kind = "mlflow"
)

// Parse returns the backend of uri and the address its driver takes.
func Parse(uri string) (Kind, string, error) {
	switch {
	case uri == "":
		return "", "", forecast.FieldErrorf(forecast.EINVALID, "registry", "registry URI is empty")
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return Postgres, uri, nil
	case strings.HasPrefix(uri, "crate://"):
		return CrateDB, "postgres://" + strings.TrimPrefix(uri, "crate://"), nil
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
		return MLflow, uri, nil
	case strings.HasPrefix(uri, "file://"):
		return Embedded, strings.TrimPrefix(uri, "file://"), nil
	case strings.HasPrefix(uri, "file:"):
		return Embedded, strings.TrimPrefix(uri, "file:"), nil
	case strings.Contains(uri, "://"):
		return "", "", forecast.FieldErrorf(forecast.EINVALID, "registry", "registry URI %q: use postgres://, crate://, http(s)://, file: or a path", forecast.RedactURI(uri))
	}
	return Embedded, uri, nil
}

// Open opens the store uri names. The caller closes it.
func Open(ctx context.Context, uri string, o registry.Options) (registry.Store, Kind, error) {
	kind, addr, err := Parse(uri)
	if err != nil {
		return nil, "", err
	}
	var s registry.Store
	switch kind {
	case Postgres:
		s, err = postgres.Open(ctx, addr, o)
	case CrateDB:
		s, err = cratedb.Open(ctx, addr, o)
	case MLflow:
		s, err = mlflowclient.New(addr, mlflowclient.Options{Token: os.Getenv("MLFLOW_TRACKING_TOKEN")})
	default:
		s, err = embedded.Open(addr, o)
	}
	if err != nil {
		return nil, "", err
	}
	return s, kind, nil
}

// Migrate creates the registry's tables where uri points when they are
// absent (MLflow's own layout; a database MLflow created is left as it is
// apart from carbongate's alias trigger). The embedded store needs none.
func Migrate(ctx context.Context, uri string) (Kind, error) {
	kind, addr, err := Parse(uri)
	if err != nil {
		return "", err
	}
	switch kind {
	case Postgres:
		return kind, postgres.Migrate(ctx, addr)
	case CrateDB:
		db, err := cratedb.Connect(ctx, addr)
		if err != nil {
			return kind, err
		}
		defer db.Close()
		return kind, cratedb.Migrate(ctx, db)
	case MLflow:
		return kind, forecast.FieldErrorf(forecast.EINVALID, "registry", "migrate needs the database URI, not the server's")
	}
	return kind, nil
}
