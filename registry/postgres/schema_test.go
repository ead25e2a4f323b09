//go:build interop

package postgres_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/postgres"
	"github.com/carbongate/carbongate/test/services"
)

// workspaceMigration does to a Migrate-made database what MLflow 3.10's
// migration 1b5f0d9ad7c1 does on PostgreSQL: drop the foreign keys (it
// finds no unique constraint on registered_models.name there), add workspace (default
// 'default') to every registry table, put it first in every primary key,
// recreate the foreign keys on (workspace, …) with MLflow's new names, add
// the workspaces catalog, record the revision.
var workspaceMigration = []string{
	`ALTER TABLE model_versions DROP CONSTRAINT model_versions_name_fkey`,
	`ALTER TABLE registered_model_tags DROP CONSTRAINT registered_model_tags_name_fkey`,
	`ALTER TABLE registered_model_aliases DROP CONSTRAINT registered_model_alias_name_fkey`,
	`ALTER TABLE model_version_tags DROP CONSTRAINT model_version_tags_name_version_fkey`,
	`ALTER TABLE registered_models ADD COLUMN workspace VARCHAR(63) DEFAULT 'default' NOT NULL`,
	`ALTER TABLE registered_models DROP CONSTRAINT registered_model_pk`,
	`ALTER TABLE registered_models ADD CONSTRAINT registered_model_pk PRIMARY KEY (workspace, name)`,
	`ALTER TABLE model_versions ADD COLUMN workspace VARCHAR(63) DEFAULT 'default' NOT NULL`,
	`ALTER TABLE model_versions DROP CONSTRAINT model_version_pk`,
	`ALTER TABLE model_versions ADD CONSTRAINT model_version_pk PRIMARY KEY (workspace, name, version)`,
	`ALTER TABLE model_versions ADD CONSTRAINT fk_model_versions_registered_models FOREIGN KEY (workspace, name)
		REFERENCES registered_models (workspace, name) ON UPDATE CASCADE`,
	`ALTER TABLE registered_model_tags ADD COLUMN workspace VARCHAR(63) DEFAULT 'default' NOT NULL`,
	`ALTER TABLE registered_model_tags DROP CONSTRAINT registered_model_tag_pk`,
	`ALTER TABLE registered_model_tags ADD CONSTRAINT registered_model_tag_pk PRIMARY KEY (workspace, key, name)`,
	`ALTER TABLE registered_model_tags ADD CONSTRAINT fk_registered_model_tags_registered_models FOREIGN KEY (workspace, name)
		REFERENCES registered_models (workspace, name) ON UPDATE CASCADE`,
	`ALTER TABLE model_version_tags ADD COLUMN workspace VARCHAR(63) DEFAULT 'default' NOT NULL`,
	`ALTER TABLE model_version_tags DROP CONSTRAINT model_version_tag_pk`,
	`ALTER TABLE model_version_tags ADD CONSTRAINT model_version_tag_pk PRIMARY KEY (workspace, key, name, version)`,
	`ALTER TABLE model_version_tags ADD CONSTRAINT fk_model_version_tags_model_versions FOREIGN KEY (workspace, name, version)
		REFERENCES model_versions (workspace, name, version) ON UPDATE CASCADE`,
	`ALTER TABLE registered_model_aliases ADD COLUMN workspace VARCHAR(63) DEFAULT 'default' NOT NULL`,
	`ALTER TABLE registered_model_aliases DROP CONSTRAINT registered_model_alias_pk`,
	`ALTER TABLE registered_model_aliases ADD CONSTRAINT registered_model_alias_pk PRIMARY KEY (workspace, name, alias)`,
	`ALTER TABLE registered_model_aliases ADD CONSTRAINT fk_registered_model_aliases_registered_models FOREIGN KEY (workspace, name)
		REFERENCES registered_models (workspace, name) ON UPDATE CASCADE ON DELETE CASCADE`,
	`CREATE INDEX idx_registered_models_workspace ON registered_models (workspace)`,
	`CREATE TABLE workspaces (name VARCHAR(63) NOT NULL, description TEXT, default_artifact_root TEXT,
		CONSTRAINT workspaces_pk PRIMARY KEY (name))`,
	`INSERT INTO workspaces (name, description) VALUES ('default', 'Default workspace for legacy resources')`,
	`UPDATE alembic_version SET version_num = '1b5f0d9ad7c1'`,
}

// catalog describes the public schema: columns, constraints, indexes.
func catalog(t *testing.T, url string) string {
	t.Helper()
	return strings.Join(queryStrings(t, url, `
SELECT x FROM (
	SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' ||
		COALESCE(character_maximum_length::text, '-') || ' ' || is_nullable || ' ' || COALESCE(column_default, '-') AS x
	FROM information_schema.columns WHERE table_schema = 'public'
	UNION ALL
	SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
	FROM pg_constraint WHERE connamespace = 'public'::regnamespace
	UNION ALL
	SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
) c ORDER BY x`), "\n")
}

func schema(t *testing.T, s *postgres.Store) postgres.SchemaInfo {
	t.Helper()
	info, err := s.Schema(testCtx(t))
	if err != nil {
		t.Fatalf("Schema: %v", err)
	}
	return info
}

// TestSchemaDetection: an empty database, one after Migrate, one after
// MLflow 3.10's workspace migration.
func TestSchemaDetection(t *testing.T) {
	t.Parallel()
	url := services.StartPostgres(t).Database(t)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)

	got := schema(t, s)
	want := postgres.SchemaInfo{Missing: []string{"registered_models", "model_versions", "registered_model_tags", "model_version_tags", "registered_model_aliases"}}
	if !equalInfo(got, want) {
		t.Fatalf("empty database: %+v, want %+v", got, want)
	}
	_, err := s.GetModel(ctx, "m")
	wantCode(t, "GetModel before Migrate", err, forecast.EUNAVAILABLE)
	if !strings.Contains(forecast.ErrorMessage(err), "carbonctl registry migrate") {
		t.Fatalf("GetModel before Migrate: %q does not say what to do", forecast.ErrorMessage(err))
	}

	migrate(t, url)
	if got, want := schema(t, s), (postgres.SchemaInfo{Tables: true, Revision: postgres.Revision, Trigger: true}); !equalInfo(got, want) {
		t.Fatalf("after Migrate: %+v, want %+v", got, want)
	}
	// The open Store sees the tables now.
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatalf("CreateModel after Migrate: %v", err)
	}

	sql(t, url, workspaceMigration...)
	if got, want := schema(t, s), (postgres.SchemaInfo{Tables: true, Revision: "1b5f0d9ad7c1", Workspace: true, Trigger: true}); !equalInfo(got, want) {
		t.Fatalf("after the workspace migration: %+v, want %+v", got, want)
	}
	if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b/m"}); err != nil {
		t.Fatalf("CreateVersion in the workspace layout: %v", err)
	}
	if got := queryStrings(t, url, `SELECT workspace || '/' || name || '/' || version FROM model_versions`); !slices.Equal(got, []string{"default/m/1"}) {
		t.Fatalf("model_versions rows = %q", got)
	}
}

func equalInfo(a, b postgres.SchemaInfo) bool {
	return a.Tables == b.Tables && slices.Equal(a.Missing, b.Missing) && a.Revision == b.Revision &&
		a.Workspace == b.Workspace && a.Tracking == b.Tracking && a.Trigger == b.Trigger
}

// TestMigrateIdempotent: a second Migrate changes nothing.
func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	before := catalog(t, url)
	migrate(t, url)
	if after := catalog(t, url); after != before {
		t.Fatalf("second Migrate changed the schema:\n--- before\n%s\n--- after\n%s", before, after)
	}
	if got := queryStrings(t, url, `SELECT version_num FROM alembic_version`); !slices.Equal(got, []string{postgres.Revision}) {
		t.Fatalf("alembic_version = %q", got)
	}
}

// TestMigrateMLflowDatabase: on a database MLflow made (tracking tables, a
// newer revision, its rows), Migrate only installs the trigger; a
// database with only some registry tables, or another application's
// alembic_version, is refused untouched.
func TestMigrateMLflowDatabase(t *testing.T) {
	t.Parallel()
	pg := services.StartPostgres(t)
	url := pg.Database(t)
	sql(t, url, postgres.CreateTablesSQL,
		`CREATE TABLE experiments (experiment_id SERIAL PRIMARY KEY, name VARCHAR(256) NOT NULL)`,
		`INSERT INTO alembic_version VALUES ('7d34483879f0')`,
		`INSERT INTO registered_models VALUES ('mlflow-model', 1, 2, 'made by MLflow')`)
	sql(t, url, workspaceMigration[:len(workspaceMigration)-1]...) // keep MLflow's revision
	before := catalog(t, url)
	migrate(t, url)
	if after := catalog(t, url); after != before {
		t.Fatalf("Migrate altered MLflow's schema:\n--- before\n%s\n--- after\n%s", before, after)
	}
	s := open(t, url, registry.Options{})
	want := postgres.SchemaInfo{Tables: true, Revision: "7d34483879f0", Workspace: true, Tracking: true, Trigger: true}
	if got := schema(t, s); !equalInfo(got, want) {
		t.Fatalf("Schema = %+v, want %+v", got, want)
	}
	m, err := s.GetModel(testCtx(t), "mlflow-model")
	if err != nil || m.Description != "made by MLflow" || m.LastUpdatedTime != 2 {
		t.Fatalf("GetModel(MLflow's row) = %+v, %v", m, err)
	}

	t.Run("partial", func(t *testing.T) {
		url := pg.Database(t)
		sql(t, url, postgres.CreateTablesSQL, `DROP TABLE registered_model_aliases`)
		before := catalog(t, url)
		err := postgres.Migrate(testCtx(t), url)
		wantCode(t, "Migrate on a partial schema", err, forecast.ECONFLICT)
		if !strings.Contains(err.Error(), "registered_model_aliases") {
			t.Fatalf("Migrate: %v does not name the missing table", err)
		}
		if after := catalog(t, url); after != before {
			t.Fatalf("refused Migrate changed the schema")
		}
	})
	t.Run("foreign alembic", func(t *testing.T) {
		url := pg.Database(t)
		sql(t, url, `CREATE TABLE alembic_version (version_num VARCHAR(32) PRIMARY KEY)`, `INSERT INTO alembic_version VALUES ('0123abcd')`)
		err := postgres.Migrate(testCtx(t), url)
		wantCode(t, "Migrate on another application's database", err, forecast.ECONFLICT)
		if got := queryStrings(t, url, `SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'`); !slices.Equal(got, []string{"alembic_version"}) {
			t.Fatalf("refused Migrate created tables: %q", got)
		}
	})
}

// TestWorkspaceIsolation: with MLflow 3.10's layout carbongate works in
// workspace 'default' and never sees or touches another workspace's rows,
// even under the same names.
func TestWorkspaceIsolation(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	sql(t, url, workspaceMigration...)
	sql(t, url,
		`INSERT INTO workspaces (name) VALUES ('team-b')`,
		`INSERT INTO registered_models (workspace, name, creation_time, last_updated_time) VALUES ('team-b', 'm', 1, 1)`,
		`INSERT INTO model_versions (workspace, name, version, current_stage, source, status) VALUES ('team-b', 'm', 7, 'None', 's3://b', 'READY')`,
		`INSERT INTO registered_model_tags (workspace, key, value, name) VALUES ('team-b', 'zone', 'FR', 'm')`,
		`INSERT INTO registered_model_aliases (workspace, alias, version, name) VALUES ('team-b', 'champion', 7, 'm')`)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)

	if _, err := s.GetModel(ctx, "m"); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("GetModel of team-b's model: %v, want ENOTFOUND", err)
	}
	if _, err := s.CreateModel(ctx, "m", "ours", []registry.Tag{{Key: "zone", Value: "DE"}}); err != nil {
		t.Fatalf("CreateModel under a name team-b uses: %v", err)
	}
	v, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://a"})
	if err != nil || v.Version != 1 {
		t.Fatalf("CreateVersion = %+v, %v; want version 1 (team-b's 7 is not ours)", v, err)
	}
	if err := s.SetAlias(ctx, "m", "champion", 1); err != nil {
		t.Fatal(err)
	}
	targets, err := s.AliasTargets(ctx)
	if err != nil || len(targets) != 1 || targets[0] != (registry.AliasTarget{Name: "m", Alias: "champion", Version: 1}) {
		t.Fatalf("AliasTargets = %+v, %v", targets, err)
	}
	page, _, err := s.SearchModels(ctx, registry.Search{MaxResults: 10, Filter: []registry.Clause{{Key: "tags.zone", Op: "=", Values: []string{"FR"}}}})
	if err != nil || len(page) != 0 {
		t.Fatalf("SearchModels(tags.zone = FR) = %+v, %v; want none", page, err)
	}
	if _, err := s.RenameModel(ctx, "m", "m2"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteModel(ctx, "m2"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"alias team-b/m/champion/7", "model team-b/m", "tag team-b/m/zone", "version team-b/m/7",
	}
	got := queryStrings(t, url, `
SELECT 'model ' || workspace || '/' || name FROM registered_models
UNION ALL SELECT 'version ' || workspace || '/' || name || '/' || version FROM model_versions
UNION ALL SELECT 'tag ' || workspace || '/' || name || '/' || key FROM registered_model_tags
UNION ALL SELECT 'alias ' || workspace || '/' || name || '/' || alias || '/' || version FROM registered_model_aliases
ORDER BY 1`)
	if !slices.Equal(got, want) {
		t.Fatalf("rows left = %q, want team-b's only: %q", got, want)
	}
}
