//go:build interop

package cratedb

import (
	"context"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

// TestMigrateAddsWorkspaceLive: tables an earlier Migrate created without
// the workspace column get it, and their rows read as workspace 'default',
// which an mlflow-cratedb 3.12 server filters on; Migrate runs again as a
// no-op.
func TestMigrateAddsWorkspaceLive(t *testing.T) {
	t.Parallel()
	crate := services.StartCrateDB(t)
	ctx := context.Background()
	db, err := Connect(ctx, crate.Schema(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(db.Close)
	for _, stmt := range ddlWithoutWorkspace() {
		if _, err := db.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, stmt := range []string{
		`INSERT INTO registered_models (name, creation_time) VALUES ('m', 1)`,
		`INSERT INTO model_versions (name, "version", source) VALUES ('m', 1, 's3://b/m')`,
		`REFRESH TABLE registered_models, model_versions`,
	} {
		if _, err := db.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for range 2 {
		if err := Migrate(ctx, db); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	for _, table := range []string{"registered_models", "model_versions"} {
		rows, err := db.Query(ctx, `SELECT "workspace" FROM `+table+` WHERE name = 'm'`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var ws *string
			if err := rows.Scan(&ws); err != nil {
				t.Fatal(err)
			}
			if ws == nil {
				got = append(got, "NULL")
			} else {
				got = append(got, *ws)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != "default" {
			t.Errorf("%s workspace after Migrate: %v, want [default]", table, got)
		}
	}
}

// ddlWithoutWorkspace is ddl as Migrate wrote it before the workspace column.
func ddlWithoutWorkspace() []string {
	out := make([]string, len(ddl))
	for i, stmt := range ddl {
		out[i] = strings.Replace(stmt, "\n   \"workspace\" VARCHAR(63) DEFAULT 'default' NOT NULL,", "", 1)
	}
	return out
}
