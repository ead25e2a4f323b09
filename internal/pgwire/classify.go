package pgwire

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carbongate/carbongate/forecast"
)

// ErrUnavailable marks an error of the connection rather than of the
// statement (refused, reset, pool closed) where the driver's own error
// does not show it, e.g. in a DB written for tests; Classify reports it
// as EUNAVAILABLE.
var ErrUnavailable = errors.New("database connection failed")

// Classify turns err, from a statement of operation what, into a
// *forecast.Error that keeps err as its cause; nil stays nil and an err
// that already holds a *forecast.Error passes unchanged. One table for
// PostgreSQL and CrateDB (CrateDB sends SQLSTATE XX000 for most errors, so
// its errors are also told apart by message):
//
//	fault                                              code
//	ctx canceled or past its deadline                  EUNAVAILABLE (ctx's error in the chain)
//	no rows (pgx.ErrNoRows)                            ENOTFOUND
//	unique violation 23505, CrateDB duplicate key,
//	  serialization failure 40001, deadlock 40P01      ECONFLICT
//	foreign key violation 23503 (the parent is gone)   ENOTFOUND
//	no such database 3D000                             ENOTFOUND
//	other data or integrity error 22xxx, 23xxx,
//	  a value CrateDB refuses                          EINVALID
//	table or schema missing 42P01, 3F000, CrateDB
//	  "Relation/Schema '…' unknown"                    EUNAVAILABLE, with b.Migrate
//	column missing 42703 (the tables changed)          EUNAVAILABLE
//	credentials refused 28xxx                          EUNAUTHORIZED
//	connection exception 08xxx, insufficient
//	  resources 53xxx, operator intervention 57xxx
//	  (shutdown, statement timeout), read-only 25006   EUNAVAILABLE
//	refused, reset, EOF, closed connection or pool,
//	  ErrUnavailable                                   EUNAVAILABLE
//	CrateDB shards not started or unavailable, cluster
//	  block, circuit breaker, node disconnected        EUNAVAILABLE
//	anything else                                      EINTERNAL
//
// A missing table is EUNAVAILABLE, not ENOTFOUND: the named thing (model,
// version, zone) may well exist once the tables do, and clients retry
// EUNAVAILABLE. On CrateDB it is also what a table reads as for a moment
// after a restart, before the cluster state has recovered.
func (b Backend) Classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var fe *forecast.Error
	if errors.As(err, &fe) {
		return err
	}
	msg := b.Name + " " + what
	if cerr := ctx.Err(); cerr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if cerr != nil && !errors.Is(err, cerr) {
			err = errors.Join(cerr, err)
		}
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": timed out or canceled", Err: err}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &forecast.Error{Code: forecast.ENOTFOUND, Message: msg + ": not found", Err: err}
	}
	text := err.Error()
	state := sqlState(err)
	switch code := stateCode(state); {
	case Duplicate(err):
		return &forecast.Error{Code: forecast.ECONFLICT, Message: msg + ": already exists", Err: err}
	case missingRelation(state, text):
		m := msg + ": table missing (" + serverMessage(err) + ")"
		if b.Migrate != "" {
			m += "; " + b.Migrate
		}
		if b.CrateDB {
			m += "; if they exist, CrateDB may still be recovering them after a restart: retry"
		}
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: m, Err: err}
	case code != forecast.EINTERNAL:
		return &forecast.Error{Code: code, Message: msg + ": " + serverMessage(err), Err: err}
	case errors.Is(err, ErrUnavailable), Unreachable(err):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": database unreachable", Err: err}
	case containsAny(text, unavailableMarks), shardNotAvailable(text):
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg + ": cluster unavailable", Err: err}
	case containsAny(text, invalidMarks):
		return &forecast.Error{Code: forecast.EINVALID, Message: msg + ": value refused", Err: err}
	}
	return &forecast.Error{Code: forecast.EINTERNAL, Message: msg + " failed", Err: err}
}

// Duplicate reports whether err rejects a key that is already taken: a
// unique violation (23505) or CrateDB's duplicate primary key.
func Duplicate(err error) bool {
	return sqlState(err) == "23505" || containsAny(err.Error(), duplicateMarks)
}

// stateCode maps a SQLSTATE to an error code; EINTERNAL for the rest
// (XX000 included, CrateDB's catch-all).
func stateCode(state string) string {
	switch {
	case state == "23505", state == "40001", state == "40P01":
		return forecast.ECONFLICT
	case state == "23503", state == "3D000":
		return forecast.ENOTFOUND
	case strings.HasPrefix(state, "22"), strings.HasPrefix(state, "23"):
		return forecast.EINVALID
	case state == "42703", state == "25006":
		return forecast.EUNAVAILABLE
	case strings.HasPrefix(state, "28"):
		return forecast.EUNAUTHORIZED
	case strings.HasPrefix(state, "08"), strings.HasPrefix(state, "53"), strings.HasPrefix(state, "57"):
		return forecast.EUNAVAILABLE
	}
	return forecast.EINTERNAL
}

// Fragments of CrateDB error messages: most carry SQLSTATE XX000, so the
// message is what tells them apart.
var (
	duplicateMarks   = []string{"DuplicateKeyException", "A document with the same primary key exists already"}
	unknownRelMarks  = []string{"RelationUnknown", "SchemaUnknown"}
	unavailableMarks = []string{
		"UnavailableShardsException", "NoShardAvailableActionException",
		"ClusterBlockException", "NodeNotConnectedException", "NodeDisconnectedException",
		"CircuitBreakingException",
		// A shard not started yet, e.g. for seconds after a restart, while
		// other tables already answer (CrateDB 6.4: "no such shard"; see
		// also shardNotAvailable).
		"ShardNotFoundException", "no such shard",
	}
	invalidMarks = []string{"ColumnValidationException", "ConversionException", "InvalidArgumentException"}
)

// missingRelation reports a table or schema that does not exist:
// PostgreSQL's undefined_table and invalid_schema_name, CrateDB's
// "Relation 'x' unknown" and "Schema 'x' unknown".
func missingRelation(state, text string) bool {
	if state == "42P01" || state == "3F000" || containsAny(text, unknownRelMarks) {
		return true
	}
	for _, kind := range []string{"Relation '", "Schema '"} {
		if i := strings.Index(text, kind); i >= 0 && strings.Contains(text[i:], "' unknown") {
			return true
		}
	}
	return false
}

// shardNotAvailable reports CrateDB's "[schema.table] shard 1 is not
// available", sent while a table's shard recovers after a restart.
func shardNotAvailable(text string) bool {
	i := strings.Index(text, "] shard ")
	return i >= 0 && strings.Contains(text[i:], " is not available")
}

// Unreachable reports whether err means the server cannot be talked to:
// refused, reset, timed out while connecting, the connection or the pool
// closed.
func Unreachable(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgconn's "conn closed" and puddle's ErrClosedPool have no exported
	// sentinel in pgx.
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "closed pool")
}

// sqlStater is implemented by server errors (*pgconn.PgError).
type sqlStater interface{ SQLState() string }

func sqlState(err error) string {
	var s sqlStater
	if errors.As(err, &s) {
		return s.SQLState()
	}
	return ""
}

// serverMessage is the server's own message when err is a server error,
// else err's text.
func serverMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

func containsAny(s string, marks []string) bool {
	for _, m := range marks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
