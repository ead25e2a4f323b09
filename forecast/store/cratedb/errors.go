package cratedb

import (
	"strings"
)

// MigrateHint is added to errors caused by missing tables.
const MigrateHint = "run migrate to create the store's tables"

// alreadyExists reports CrateDB's answer to creating a table another
// process created at the same moment.
func alreadyExists(err error) bool {
	return strings.Contains(err.Error(), "RelationAlreadyExists") || strings.Contains(err.Error(), "already exists")
}
