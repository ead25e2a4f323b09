package cratedb

import (
	"context"
	"strings"
)

// MigrateHint is added to errors caused by missing tables.
const MigrateHint = "run migrate to create the store's tables"

// classify maps a statement's error to the domain vocabulary with
// pgwire's one classification, keeping it as the cause: context errors,
// connection failures and CrateDB's shard, cluster and memory-pressure
// exceptions are EUNAVAILABLE; a missing table or schema is EUNAVAILABLE
// with MigrateHint (as on PostgreSQL); a value CrateDB refuses is
// EINVALID; anything else is EINTERNAL. *forecast.Error values pass
// through.
func classify(ctx context.Context, what string, err error) error {
	return backend.Classify(ctx, what, err)
}

// alreadyExists reports CrateDB's answer to creating a table another
// process created at the same moment.
func alreadyExists(err error) bool {
	return strings.Contains(err.Error(), "RelationAlreadyExists") || strings.Contains(err.Error(), "already exists")
}
