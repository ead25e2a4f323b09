package cratedb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

// keyRows are the rows of information_schema.key_column_usage for tables
// created by Migrate.
func keyRows() [][]any {
	var out [][]any
	for _, t := range tables {
		for _, c := range primaryKeys[t] {
			out = append(out, row(t, c))
		}
	}
	return out
}

func withoutTable(rs [][]any, table string) [][]any {
	var out [][]any
	for _, r := range rs {
		if r[0] != table {
			out = append(out, r)
		}
	}
	return out
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	db := newFake(&reply{match: "information_schema.key_column_usage", rows: keyRows()})
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	calls := db.transcript()
	checkRules(t, calls, true)
	golden(t, "migrate", calls, "ok")
	for i, c := range calls[:len(ddl)] {
		if !strings.HasPrefix(c.sql, `CREATE TABLE IF NOT EXISTS "`+tables[i]+`"`) || !strings.Contains(c.sql, "PRIMARY KEY (") {
			t.Errorf("statement %d is not an idempotent CREATE TABLE with a primary key: %s", i, c.sql)
		}
	}
}

// TestDDLKeepsMlflowCratedbColumns pins the columns taken from
// mlflow-cratedb's adapter/ddl/cratedb.sql, so that an mlflow-cratedb
// server can work on tables created by Migrate.
func TestDDLKeepsMlflowCratedbColumns(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		tModels:   {`"name" TEXT NOT NULL`, `"key" TEXT DEFAULT GEN_RANDOM_TEXT_UUID() NOT NULL`, `"value" TEXT`, `"creation_time" BIGINT`, `"last_updated_time" BIGINT`, `"description" TEXT`, `"workspace" VARCHAR(63) DEFAULT 'default' NOT NULL`},
		tVersions: {`"name" TEXT NOT NULL`, `"version" INTEGER NOT NULL`, `"creation_time" BIGINT`, `"last_updated_time" BIGINT`, `"description" TEXT`, `"user_id" TEXT`, `"current_stage" TEXT`, `"source" TEXT`, `"storage_location" TEXT`, `"run_id" TEXT`, `"run_link" TEXT`, `"status" TEXT`, `"status_message" TEXT`, `"workspace" VARCHAR(63) DEFAULT 'default' NOT NULL`},
		tModelTag: {`"name" TEXT NOT NULL`, `"key" TEXT NOT NULL`, `"value" TEXT NOT NULL`, `"creation_time" BIGINT`, `"last_update_time" BIGINT`, `"description" TEXT`, `"workspace" VARCHAR(63) DEFAULT 'default' NOT NULL`},
		tVerTag:   {`"name" TEXT NOT NULL`, `"version" INTEGER NOT NULL`, `"key" TEXT NOT NULL`, `"value" TEXT`, `"workspace" VARCHAR(63) DEFAULT 'default' NOT NULL`},
		tAliases:  {`"name" TEXT NOT NULL`, `"alias" TEXT NOT NULL`, `"version" TEXT NOT NULL`, `"workspace" VARCHAR(63) DEFAULT 'default' NOT NULL`},
	}
	for i, stmt := range ddl {
		var cols []string
		for _, line := range strings.Split(stmt, "\n")[1:] {
			line = strings.TrimSuffix(strings.TrimSpace(line), ",")
			if strings.HasPrefix(line, `"`) {
				cols = append(cols, line)
			}
		}
		if got, w := strings.Join(cols, "; "), strings.Join(want[tables[i]], "; "); got != w {
			t.Errorf("%s columns\n got %s\nwant %s", tables[i], got, w)
		}
	}
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	keys := "information_schema.key_column_usage"
	exists := "information_schema.tables"
	wrongKey := append(withoutTable(keyRows(), tAliases), row(tAliases, "name"))
	tests := []struct {
		name    string
		replies []*reply
		code    string
		msg     string
	}{
		{"ok", []*reply{{match: keys, rows: keyRows()}}, "", ""},
		{"table missing", []*reply{{match: keys, rows: withoutTable(keyRows(), tVersions)}}, forecast.EUNAVAILABLE, MigrateHint},
		{"created by mlflow-cratedb (no primary key)", []*reply{{match: keys, rows: withoutTable(keyRows(), tVersions)},
			rows(exists, row(tVersions))}, forecast.EINVALID, "has no primary key"},
		{"other primary key", []*reply{{match: keys, rows: wrongKey}}, forecast.EINVALID, "needs PRIMARY KEY (name, alias)"},
		{"created by mlflow-cratedb 3.12 (workspace first)", []*reply{{match: keys, rows: append([][]any{row(tModels, "workspace")}, keyRows()...)}},
			forecast.EINVALID, "has PRIMARY KEY (workspace, name) (mlflow-cratedb 3.12 creates it so); the registry needs PRIMARY KEY (name): " + ConvertHint},
		{"unreachable", []*reply{fail(keys, errors.Join(pgwire.ErrUnavailable, errors.New("dial tcp: connection refused")))}, forecast.EUNAVAILABLE, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newFake(tc.replies...)
			err := CheckSchema(context.Background(), db)
			if got := forecast.ErrorCode(err); got != tc.code {
				t.Fatalf("error %v, want code %q", err, tc.code)
			}
			if !strings.Contains(forecast.ErrorMessage(err), tc.msg) {
				t.Errorf("message %q does not say %q", forecast.ErrorMessage(err), tc.msg)
			}
			checkRules(t, db.transcript(), err == nil)
		})
	}
}

func TestOpenMalformedURL(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "postgres://crate:secret@localhost:notaport/doc", registry.Options{})
	if got := forecast.ErrorCode(err); got != forecast.EINVALID {
		t.Fatalf("error %v, want EINVALID", err)
	}
	if strings.Contains(forecast.ErrorMessage(err), "secret") {
		t.Errorf("message repeats the password: %q", forecast.ErrorMessage(err))
	}
}

// TestOpenUnreachable runs the real pgx path against a closed port.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://crate@127.0.0.1:1/doc?connect_timeout=5", registry.Options{})
	if got := forecast.ErrorCode(err); got != forecast.EUNAVAILABLE {
		t.Fatalf("error %v, want EUNAVAILABLE", err)
	}
}

func TestNewNeedsDB(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, registry.Options{}); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("New(nil): %v, want EINVALID", err)
	}
}
