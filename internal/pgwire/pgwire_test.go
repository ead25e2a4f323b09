package pgwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carbongate/carbongate/forecast"
)

var testBackend = Backend{Name: "test", Field: "url", Migrate: "run migrate", Params: map[string]string{"application_name": "carbongate"}}

func pgErr(code, msg string) *pgconn.PgError {
	return &pgconn.PgError{Severity: "ERROR", Code: code, Message: msg}
}

// TestClassify is the one table of error codes: PostgreSQL's SQLSTATEs,
// CrateDB's messages (SQLSTATE XX000) and the connection's failures.
func TestClassify(t *testing.T) {
	t.Parallel()
	ours := forecast.Errorf(forecast.ENOTFOUND, "Registered Model with name=m not found")
	tests := []struct {
		note string
		err  error
		code string
		hint bool // the message says to migrate
	}{
		{note: "ours pass through", err: ours, code: forecast.ENOTFOUND},
		{note: "ours wrapped pass through", err: fmt.Errorf("scan: %w", ours), code: forecast.ENOTFOUND},
		{note: "no rows", err: pgx.ErrNoRows, code: forecast.ENOTFOUND},
		// ECONFLICT
		{note: "unique violation", err: pgErr("23505", "duplicate key"), code: forecast.ECONFLICT},
		{note: "wrapped unique violation", err: fmt.Errorf("insert: %w", pgErr("23505", "duplicate key")), code: forecast.ECONFLICT},
		{note: "serialization failure", err: pgErr("40001", ""), code: forecast.ECONFLICT},
		{note: "deadlock", err: pgErr("40P01", ""), code: forecast.ECONFLICT},
		{note: "CrateDB duplicate, exception name", err: pgErr("XX000", "DuplicateKeyException[A document with the same primary key exists already]"), code: forecast.ECONFLICT},
		{note: "CrateDB duplicate, bare message", err: pgErr("XX000", "A document with the same primary key exists already"), code: forecast.ECONFLICT},
		// ENOTFOUND
		{note: "foreign key: the parent is gone", err: pgErr("23503", ""), code: forecast.ENOTFOUND},
		{note: "no such database", err: pgErr("3D000", `database "x" does not exist`), code: forecast.ENOTFOUND},
		// EINVALID
		{note: "too long", err: pgErr("22001", ""), code: forecast.EINVALID},
		{note: "bad text", err: pgErr("22021", ""), code: forecast.EINVALID},
		{note: "not null", err: pgErr("23502", ""), code: forecast.EINVALID},
		{note: "CrateDB refuses a value", err: pgErr("XX000", "ColumnValidationException[Validation failed for value]"), code: forecast.EINVALID},
		// EUNAVAILABLE: tables missing
		{note: "table missing", err: pgErr("42P01", `relation "forecasts" does not exist`), code: forecast.EUNAVAILABLE, hint: true},
		{note: "schema missing", err: pgErr("3F000", ""), code: forecast.EUNAVAILABLE, hint: true},
		{note: "CrateDB relation unknown", err: pgErr("XX000", "Relation 'model_versions' unknown"), code: forecast.EUNAVAILABLE, hint: true},
		{note: "CrateDB RelationUnknown", err: pgErr("XX000", "RelationUnknown[Relation 'doc.forecasts' unknown]"), code: forecast.EUNAVAILABLE, hint: true},
		{note: "CrateDB schema unknown", err: pgErr("XX000", "Schema 'mlflow' unknown"), code: forecast.EUNAVAILABLE, hint: true},
		{note: "CrateDB SchemaUnknownException", err: pgErr("XX000", "SchemaUnknownException[Schema 'mlflow' unknown]"), code: forecast.EUNAVAILABLE, hint: true},
		{note: "column missing", err: pgErr("42703", ""), code: forecast.EUNAVAILABLE},
		// EUNAVAILABLE: the server
		{note: "admin shutdown", err: pgErr("57P01", ""), code: forecast.EUNAVAILABLE},
		{note: "statement timeout", err: pgErr("57014", ""), code: forecast.EUNAVAILABLE},
		{note: "too many connections", err: pgErr("53300", ""), code: forecast.EUNAVAILABLE},
		{note: "connection failure", err: pgErr("08006", ""), code: forecast.EUNAVAILABLE},
		{note: "read-only standby", err: pgErr("25006", ""), code: forecast.EUNAVAILABLE},
		{note: "CrateDB shards unavailable", err: pgErr("XX000", "UnavailableShardsException[[model_versions][0] primary shard is not active]"), code: forecast.EUNAVAILABLE},
		{note: "CrateDB shard recovering after a restart", err: pgErr("XX000", "[doc.registered_model_aliases] shard 1 is not available"), code: forecast.EUNAVAILABLE},
		{note: "CrateDB shard not started after a restart", err: pgErr("XX000", "no such shard"), code: forecast.EUNAVAILABLE},
		{note: "CrateDB cluster block", err: pgErr("XX000", "ClusterBlockException[blocked by: [SERVICE_UNAVAILABLE/1/state not recovered]]"), code: forecast.EUNAVAILABLE},
		{note: "CrateDB circuit breaker", err: pgErr("XX000", "CircuitBreakingException[[query] Data too large]"), code: forecast.EUNAVAILABLE},
		// EUNAVAILABLE: the connection
		{note: "refused", err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED), code: forecast.EUNAVAILABLE},
		{note: "dial error", err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, code: forecast.EUNAVAILABLE},
		{note: "eof", err: io.ErrUnexpectedEOF, code: forecast.EUNAVAILABLE},
		{note: "closed connection", err: net.ErrClosed, code: forecast.EUNAVAILABLE},
		{note: "marked", err: errors.Join(ErrUnavailable, errors.New("reset")), code: forecast.EUNAVAILABLE},
		// EUNAUTHORIZED
		{note: "bad password", err: pgErr("28P01", "password authentication failed"), code: forecast.EUNAUTHORIZED},
		// EINTERNAL
		{note: "syntax error", err: pgErr("42601", ""), code: forecast.EINTERNAL},
		{note: "CrateDB syntax error", err: pgErr("XX000", "SQLParseException[line 1:8: mismatched input]"), code: forecast.EINTERNAL},
		{note: "client error", err: errors.New("unable to encode"), code: forecast.EINTERNAL},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			got := testBackend.Classify(context.Background(), "op", tc.err)
			if forecast.ErrorCode(got) != tc.code {
				t.Fatalf("Classify(%v) = %v, want code %s", tc.err, got, tc.code)
			}
			if !errors.Is(got, tc.err) {
				t.Fatalf("cause lost: %v", got)
			}
			if hint := strings.Contains(forecast.ErrorMessage(got), testBackend.Migrate); hint != tc.hint {
				t.Fatalf("message %q names migrate: %v, want %v", forecast.ErrorMessage(got), hint, tc.hint)
			}
		})
	}
}

// TestClassifyCrateDBMissingTable: on CrateDB a missing table may be one
// still recovering after a restart, and the message says so; elsewhere
// it does not.
func TestClassifyCrateDBMissingTable(t *testing.T) {
	t.Parallel()
	err := pgErr("42P01", "Relation 'doc.forecasts' unknown")
	crate := testBackend
	crate.CrateDB = true
	for _, tc := range []struct {
		b    Backend
		note bool
	}{{testBackend, false}, {crate, true}} {
		got := tc.b.Classify(context.Background(), "op", err)
		msg := forecast.ErrorMessage(got)
		if forecast.ErrorCode(got) != forecast.EUNAVAILABLE || !strings.Contains(msg, tc.b.Migrate) || strings.Contains(msg, "restart") != tc.note {
			t.Fatalf("CrateDB=%v: %v, want EUNAVAILABLE saying to migrate, and a restart note %v", tc.b.CrateDB, got, tc.note)
		}
	}
}

func TestClassifyContext(t *testing.T) {
	t.Parallel()
	if testBackend.Classify(context.Background(), "op", nil) != nil {
		t.Fatal("Classify(nil) != nil")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{errors.New("conn closed"), fmt.Errorf("timeout: %w", context.DeadlineExceeded)} {
		got := testBackend.Classify(ctx, "op", err)
		if !errors.Is(got, context.Canceled) || !errors.Is(got, err) || forecast.ErrorCode(got) != forecast.EUNAVAILABLE {
			t.Fatalf("Classify(canceled ctx, %v) = %v, want EUNAVAILABLE keeping context.Canceled and the cause", err, got)
		}
	}
	got := testBackend.Classify(context.Background(), "op", fmt.Errorf("timeout: %w", context.DeadlineExceeded))
	if !errors.Is(got, context.DeadlineExceeded) || forecast.ErrorCode(got) != forecast.EUNAVAILABLE {
		t.Fatalf("Classify(deadline) = %v, want EUNAVAILABLE keeping context.DeadlineExceeded", got)
	}
}

// TestClosedPool: a call on a closed pool is EUNAVAILABLE (no server is
// needed: the pool refuses before dialing).
func TestClosedPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := testBackend.Connect(ctx, "postgres://u@127.0.0.1:1/db")
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close() // twice is harmless
	_, err = p.Exec(ctx, "SELECT 1")
	if got := forecast.ErrorCode(testBackend.Classify(ctx, "op", err)); got != forecast.EUNAVAILABLE {
		t.Fatalf("Exec after Close: %v classified %q, want %q", err, got, forecast.EUNAVAILABLE)
	}
	_, err = p.Query(ctx, "SELECT 1")
	if got := forecast.ErrorCode(testBackend.Classify(ctx, "op", err)); got != forecast.EUNAVAILABLE {
		t.Fatalf("Query after Close: %v classified %q, want %q", err, got, forecast.EUNAVAILABLE)
	}
}

// TestOpenUnreachable: nothing listens on port 1, so Open fails with
// EUNAVAILABLE within its deadline.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := testBackend.Open(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=5")
	if got := forecast.ErrorCode(err); got != forecast.EUNAVAILABLE {
		t.Fatalf("Open on a closed port: %v (code %q), want %q", err, got, forecast.EUNAVAILABLE)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	cfg, err := testBackend.ParseConfig("postgres://u:p@db.example:5433/reg?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.ConnectTimeout != ConnectTimeout || cfg.ConnConfig.RuntimeParams["application_name"] != "carbongate" {
		t.Fatalf("defaults not applied: timeout %v, params %v", cfg.ConnConfig.ConnectTimeout, cfg.ConnConfig.RuntimeParams)
	}
	cfg, err = testBackend.ParseConfig("postgres://db.example/reg?connect_timeout=3&application_name=x")
	if err != nil || cfg.ConnConfig.ConnectTimeout.Seconds() != 3 || cfg.ConnConfig.RuntimeParams["application_name"] != "x" {
		t.Fatalf("URL settings overridden: %v, %v", cfg, err)
	}
	for _, url := range []string{"", " ", "postgres://u:hunter2@[::1/db", "postgres://u:hunter2@h:notaport/db"} {
		_, err = testBackend.ParseConfig(url)
		if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != testBackend.Field || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("ParseConfig(%q) = %v, want EINVALID naming %q without the password", url, err, testBackend.Field)
		}
	}
}

func TestWithTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("no deadline an hour away: %v %v", d, ok)
	}
	parent, cancelParent := context.WithTimeout(context.Background(), time.Minute)
	defer cancelParent()
	ctx, cancel = WithTimeout(parent, time.Hour)
	defer cancel()
	if d, _ := ctx.Deadline(); time.Until(d) > time.Minute {
		t.Fatalf("the caller's deadline was replaced: %v", d)
	}
}
