package cratedb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// MigrateHint is appended to errors caused by missing tables.
const MigrateHint = "run `carbonctl registry migrate` to create the registry tables"

// sqlStater is implemented by server errors (*pgconn.PgError).
type sqlStater interface{ SQLState() string }

// Fragments of CrateDB error messages. CrateDB sent SQLSTATE XX000 for every
// error before 4.3 and still does for most, so the message is what tells
// errors apart; the SQLSTATEs newer servers send are checked too.
var (
	duplicateMarks   = []string{"DuplicateKeyException", "A document with the same primary key exists already"}
	unknownRelMarks  = []string{"RelationUnknown", "SchemaUnknown"}
	unavailableMarks = []string{
		"UnavailableShardsException", "NoShardAvailableActionException",
		"ClusterBlockException", "NodeNotConnectedException", "NodeDisconnectedException",
		"CircuitBreakingException",
		// A shard not started yet, e.g. for seconds after a restart, while
		// other tables already answer (CrateDB 6.4: "no such shard"; see
		// also isShardNotAvailable).
		"ShardNotFoundException", "no such shard",
	}
)

// classify maps an error of a statement to the domain vocabulary, keeping
// it as the cause; what names the operation in the message.
//
//   - context errors stay plain (wrapped, so errors.Is still finds them);
//   - ErrUnavailable, and CrateDB's shard/cluster/memory-pressure
//     exceptions, are EUNAVAILABLE;
//   - a duplicate primary key (SQLSTATE 23505 or its message) is ECONFLICT;
//   - an unknown table or schema (42P01, 3F000 or "Relation 'x' unknown",
//     "Schema 'x' unknown") is ENOTFOUND with MigrateHint;
//   - anything else is EINTERNAL.
func classify(ctx context.Context, what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cratedb %s: %w", what, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cratedb %s: %w: %w", what, ctx.Err(), err)
	}
	msg := "cratedb " + what
	switch {
	case errors.Is(err, ErrUnavailable):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": database unreachable", Err: err}
	case isDuplicate(err):
		return &forecast.Error{Code: forecast.ECONFLICT, Message: msg + ": already exists", Err: err}
	case isUnknownRelation(err):
		return &forecast.Error{Code: forecast.ENOTFOUND, Message: msg + ": table missing; " + MigrateHint, Err: err}
	case containsAny(err.Error(), unavailableMarks), isShardNotAvailable(err.Error()):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": cluster unavailable", Err: err}
	}
	return &forecast.Error{Code: forecast.EINTERNAL, Message: msg + " failed", Err: err}
}

// isDuplicate reports whether err is CrateDB's rejection of a primary key
// that is already taken.
func isDuplicate(err error) bool {
	return sqlState(err) == "23505" || containsAny(err.Error(), duplicateMarks)
}

// isShardNotAvailable reports CrateDB's "[schema.table] shard 1 is not
// available", sent while a table's shard recovers after a restart.
func isShardNotAvailable(msg string) bool {
	i := strings.Index(msg, "] shard ")
	return i >= 0 && strings.Contains(msg[i:], " is not available")
}

func isUnknownRelation(err error) bool {
	switch sqlState(err) {
	case "42P01", "3F000":
		return true
	}
	m := err.Error()
	if containsAny(m, unknownRelMarks) {
		return true
	}
	for _, kind := range []string{"Relation '", "Schema '"} {
		if i := strings.Index(m, kind); i >= 0 && strings.Contains(m[i:], "' unknown") {
			return true
		}
	}
	return false
}

func sqlState(err error) string {
	var s sqlStater
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

func containsAny(s string, marks []string) bool {
	for _, m := range marks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// modelNotFound is the ENOTFOUND of a missing registered model.
func modelNotFound(name string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "registered model with name=%s not found", name)
}

// versionNotFound is the ENOTFOUND of a missing or soft-deleted version.
func versionNotFound(name string, version int64) error {
	return forecast.Errorf(forecast.ENOTFOUND, "model version (name=%s, version=%d) not found", name, version)
}
