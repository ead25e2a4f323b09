package cratedb

import (
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// MigrateHint is appended to errors caused by missing tables. Right after a
// CrateDB restart a table reads as missing for a moment too, so the code
// is EUNAVAILABLE (retry), never ENOTFOUND.
const MigrateHint = "run `carbonctl registry migrate` to create the registry tables"

// backend is how this package's errors read and its pools are set up;
// backend.Classify maps an error of a statement to the domain vocabulary
// (a duplicate primary key is ECONFLICT, an unknown table or schema
// EUNAVAILABLE with MigrateHint, CrateDB's shard, cluster and
// memory-pressure exceptions, connection failures and context errors
// EUNAVAILABLE), keeping it as the cause.
var backend = pgwire.Backend{
	Name:    "cratedb",
	Field:   "url",
	Migrate: MigrateHint,
	CrateDB: true,
	Params:  map[string]string{"application_name": "carbongate"},
}

// modelNotFound is the ENOTFOUND of a missing registered model.
func modelNotFound(name string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "registered model with name=%s not found", name)
}

// versionNotFound is the ENOTFOUND of a missing or soft-deleted version.
func versionNotFound(name string, version int64) error {
	return forecast.Errorf(forecast.ENOTFOUND, "model version (name=%s, version=%d) not found", name, version)
}
