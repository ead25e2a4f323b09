package cratedb

import (
	"context"
	"errors"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// MigrateHint is added to errors caused by missing tables.
const MigrateHint = "run migrate to create the store's tables"

// Fragments of CrateDB error messages: most errors carry SQLSTATE XX000,
// so the message is what tells them apart.
var (
	unknownRelMarks  = []string{"RelationUnknown", "SchemaUnknown"}
	unavailableMarks = []string{
		"UnavailableShardsException", "NoShardAvailableActionException",
		"ClusterBlockException", "NodeNotConnectedException", "NodeDisconnectedException",
		"CircuitBreakingException",
	}
	invalidMarks = []string{"ColumnValidationException", "ConversionException", "InvalidArgumentException"}
)

// classify maps a statement's error to the domain vocabulary, keeping it
// as the cause: context errors and ErrUnavailable, and CrateDB's shard,
// cluster and memory-pressure exceptions are EUNAVAILABLE; a missing table
// or schema is EUNAVAILABLE with MigrateHint (as on PostgreSQL); a value
// CrateDB refuses is EINVALID; anything else is EINTERNAL. *forecast.Error
// values pass through.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var fe *forecast.Error
	if errors.As(err, &fe) {
		return err
	}
	msg := "cratedb store: " + what
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = errors.Join(cerr, err)
		}
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": timed out or canceled", Err: err}
	case errors.Is(err, ErrUnavailable):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": database unreachable", Err: err}
	case isUnknownRelation(err):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": table missing; " + MigrateHint, Err: err}
	case containsAny(err.Error(), unavailableMarks):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": cluster unavailable", Err: err}
	case containsAny(err.Error(), invalidMarks):
		return &forecast.Error{Code: forecast.EINVALID, Message: msg + ": value refused", Err: err}
	}
	return &forecast.Error{Code: forecast.EINTERNAL, Message: msg + " failed", Err: err}
}

// sqlStater is implemented by server errors (*pgconn.PgError).
type sqlStater interface{ SQLState() string }

func isUnknownRelation(err error) bool {
	var s sqlStater
	if errors.As(err, &s) && (s.SQLState() == "42P01" || s.SQLState() == "3F000") {
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

// alreadyExists reports CrateDB's answer to creating a table another
// process created at the same moment.
func alreadyExists(err error) bool {
	return strings.Contains(err.Error(), "RelationAlreadyExists") || strings.Contains(err.Error(), "already exists")
}

func containsAny(s string, marks []string) bool {
	for _, m := range marks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
