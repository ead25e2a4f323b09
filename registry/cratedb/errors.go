package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/pgwire"
)

// MigrateHint is appended to errors caused by missing tables. Right after a
// CrateDB restart a table reads as missing for a moment too, so the code
// is EUNAVAILABLE (retry), never ENOTFOUND.
const MigrateHint = "run `carbonctl registry migrate` to create the registry tables"

// backend is how this package's errors read and its pools are set up.
var backend = pgwire.Backend{
	Name:    "cratedb",
	Field:   "url",
	Migrate: MigrateHint,
	Params:  map[string]string{"application_name": "carbongate"},
}

// classify maps an error of a statement to the domain vocabulary with
// pgwire's one classification, keeping it as the cause; what names the
// operation in the message. A duplicate primary key is ECONFLICT; an
// unknown table or schema is EUNAVAILABLE with MigrateHint; CrateDB's
// shard, cluster and memory-pressure exceptions and connection failures
// are EUNAVAILABLE; context errors are EUNAVAILABLE and stay in the chain.
func classify(ctx context.Context, what string, err error) error {
	return backend.Classify(ctx, what, err)
}

// modelNotFound is the ENOTFOUND of a missing registered model.
func modelNotFound(name string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "registered model with name=%s not found", name)
}

// versionNotFound is the ENOTFOUND of a missing or soft-deleted version.
func versionNotFound(name string, version int64) error {
	return forecast.Errorf(forecast.ENOTFOUND, "model version (name=%s, version=%d) not found", name, version)
}
