package cratedb

import (
	"context"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// The registry tables, as mlflow-cratedb names them.
const (
	tModels   = "registered_models"
	tVersions = "model_versions"
	tModelTag = "registered_model_tags"
	tVerTag   = "model_version_tags"
	tAliases  = "registered_model_aliases"
)

// tables lists the registry tables in the order Migrate creates them.
var tables = []string{tModels, tVersions, tModelTag, tVerTag, tAliases}

// primaryKeys are the primary keys the Store relies on: ON CONFLICT targets,
// duplicate detection for version allocation, and the lookups that see
// writes without REFRESH TABLE.
var primaryKeys = map[string][]string{
	tModels:   {"name"},
	tVersions: {"name", "version"},
	tModelTag: {"name", "key"},
	tVerTag:   {"name", "version", "key"},
	tAliases:  {"name", "alias"},
}

// ddl creates the registry tables. Names, columns and types are those of
// mlflow-cratedb's adapter/ddl/cratedb.sql (3.12.0), including its oddities
// (the unused "key"/"value" columns of registered_models, the extra columns
// of registered_model_tags, and registered_model_aliases.version as TEXT),
// so an mlflow-cratedb server can use tables created here. The one
// difference is the PRIMARY KEY of each table: mlflow-cratedb 3.12 leads
// every key with "workspace" (MLflow 3.10's workspaces), which this Store
// does not put in its lookups, ON CONFLICT targets and duplicate-key
// version allocation; here the key leaves it out, and the column keeps its
// default 'default', the only workspace MLflow uses unless workspaces are
// turned on.
var ddl = []string{
	`CREATE TABLE IF NOT EXISTS "registered_models" (
   "name" TEXT NOT NULL,
   "key" TEXT DEFAULT GEN_RANDOM_TEXT_UUID() NOT NULL,
   "value" TEXT,
   "creation_time" BIGINT,
   "last_updated_time" BIGINT,
   "description" TEXT,
   "workspace" VARCHAR(63) DEFAULT 'default' NOT NULL,
   PRIMARY KEY ("name")
)`,
	`CREATE TABLE IF NOT EXISTS "model_versions" (
   "name" TEXT NOT NULL,
   "version" INTEGER NOT NULL,
   "creation_time" BIGINT,
   "last_updated_time" BIGINT,
   "description" TEXT,
   "user_id" TEXT,
   "current_stage" TEXT,
   "source" TEXT,
   "storage_location" TEXT,
   "run_id" TEXT,
   "run_link" TEXT,
   "status" TEXT,
   "status_message" TEXT,
   "workspace" VARCHAR(63) DEFAULT 'default' NOT NULL,
   PRIMARY KEY ("name", "version")
)`,
	`CREATE TABLE IF NOT EXISTS "registered_model_tags" (
   "name" TEXT NOT NULL,
   "key" TEXT NOT NULL,
   "value" TEXT NOT NULL,
   "creation_time" BIGINT,
   "last_update_time" BIGINT,
   "description" TEXT,
   "workspace" VARCHAR(63) DEFAULT 'default' NOT NULL,
   PRIMARY KEY ("name", "key")
)`,
	`CREATE TABLE IF NOT EXISTS "model_version_tags" (
   "name" TEXT NOT NULL,
   "version" INTEGER NOT NULL,
   "key" TEXT NOT NULL,
   "value" TEXT,
   "workspace" VARCHAR(63) DEFAULT 'default' NOT NULL,
   PRIMARY KEY ("name", "version", "key")
)`,
	`CREATE TABLE IF NOT EXISTS "registered_model_aliases" (
   "name" TEXT NOT NULL,
   "alias" TEXT NOT NULL,
   "version" TEXT NOT NULL,
   "workspace" VARCHAR(63) DEFAULT 'default' NOT NULL,
   PRIMARY KEY ("name", "alias")
)`,
}

// Migrate creates the registry tables that do not exist (CREATE TABLE IF
// NOT EXISTS, so it is safe to run again), gives tables that an earlier
// Migrate created without it the "workspace" column an MLflow 3.10+ server
// (mlflow-cratedb 3.12) selects, and then checks them with CheckSchema:
// tables created by mlflow-cratedb have other primary keys, and Migrate
// reports them rather than pretend all is well. Rows written before the
// column existed read as workspace NULL, which MLflow does not find, so
// they are set to 'default'.
func Migrate(ctx context.Context, db DB) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	for i, stmt := range ddl {
		if _, err := db.Exec(ctx, stmt); err != nil {
			return backend.Classify(ctx, "create table "+tables[i], err)
		}
	}
	missing, err := withoutWorkspace(ctx, db)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return CheckSchema(ctx, db)
	}
	for _, t := range missing {
		if _, err := db.Exec(ctx, `ALTER TABLE `+t+` ADD COLUMN "workspace" VARCHAR(63) DEFAULT '`+workspace+`'`); err != nil {
			return backend.Classify(ctx, "add workspace to "+t, err)
		}
	}
	refresh := "REFRESH TABLE " + strings.Join(missing, ", ")
	if _, err := db.Exec(ctx, refresh); err != nil {
		return backend.Classify(ctx, "refresh", err)
	}
	for _, t := range missing {
		if _, err := db.Exec(ctx, `UPDATE `+t+` SET "workspace" = $1 WHERE "workspace" IS NULL`, workspace); err != nil {
			return backend.Classify(ctx, "set workspace of "+t, err)
		}
	}
	if _, err := db.Exec(ctx, refresh); err != nil {
		return backend.Classify(ctx, "refresh", err)
	}
	return CheckSchema(ctx, db)
}

const workspaceQuery = `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema AND column_name = $1 AND table_name IN ($2, $3, $4, $5, $6)`

// withoutWorkspace lists the registry tables that have no workspace column
// (CrateDB has no ADD COLUMN IF NOT EXISTS).
func withoutWorkspace(ctx context.Context, db DB) ([]string, error) {
	rows, err := db.Query(ctx, workspaceQuery, "workspace", tModels, tVersions, tModelTag, tVerTag, tAliases)
	if err != nil {
		return nil, backend.Classify(ctx, "check schema", err)
	}
	defer rows.Close()
	has := map[string]bool{}
	for rows.Next() {
		var table string
		if err := rows.Scan(&table); err != nil {
			return nil, scanError(ctx, "check schema", err)
		}
		has[table] = true
	}
	if err := rows.Err(); err != nil {
		return nil, backend.Classify(ctx, "check schema", err)
	}
	var out []string
	for _, t := range tables {
		if !has[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// workspace is the MLflow workspace of every row carbongate writes (the
// column's default): MLflow's only one unless workspaces are turned on.
const workspace = "default"

// ConvertHint says how tables with other primary keys are moved.
const ConvertHint = "copy the rows into tables created by `carbonctl registry migrate` in another schema (registry/cratedb/convert-mlflow-cratedb.sql) and use that schema"

const schemaQuery = `SELECT table_name, column_name FROM information_schema.key_column_usage WHERE table_schema = current_schema AND table_name IN ($1, $2, $3, $4, $5) ORDER BY table_name, ordinal_position`

// CheckSchema verifies that every registry table exists in the session's
// schema with the primary key the Store relies on. EUNAVAILABLE (with
// MigrateHint) when a table is missing; EINVALID (with ConvertHint) when a
// table has another primary key or none, as mlflow-cratedb 3.12 creates
// them (workspace first): such a table cannot be fixed in place (CrateDB
// cannot change the primary key of an existing table), so its rows must be
// copied into a table created by Migrate.
func CheckSchema(ctx context.Context, db DB) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	rows, err := db.Query(ctx, schemaQuery, tModels, tVersions, tModelTag, tVerTag, tAliases)
	if err != nil {
		return backend.Classify(ctx, "check schema", err)
	}
	defer rows.Close()
	got := map[string][]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return scanError(ctx, "check schema", err)
		}
		got[table] = append(got[table], column)
	}
	if err := rows.Err(); err != nil {
		return backend.Classify(ctx, "check schema", err)
	}
	return comparePrimaryKeys(ctx, db, got)
}

// comparePrimaryKeys reports the first table whose primary key differs
// from primaryKeys; a table without key columns is looked up to tell a
// missing table from one without a primary key.
func comparePrimaryKeys(ctx context.Context, db DB, got map[string][]string) error {
	for _, t := range tables {
		want := primaryKeys[t]
		have := got[t]
		if slices.Equal(sorted(have), sorted(want)) {
			continue
		}
		if len(have) == 0 {
			exists, err := tableExists(ctx, db, t)
			if err != nil {
				return err
			}
			if !exists {
				return forecast.Errorf(forecast.EUNAVAILABLE, "cratedb: table %s does not exist; %s", t, MigrateHint)
			}
			return forecast.Errorf(forecast.EINVALID, "cratedb: table %s has no primary key; the registry needs PRIMARY KEY (%s): %s", t, strings.Join(want, ", "), ConvertHint)
		}
		return forecast.Errorf(forecast.EINVALID, "cratedb: table %s has PRIMARY KEY (%s) (mlflow-cratedb 3.12 creates it so); the registry needs PRIMARY KEY (%s): %s", t, strings.Join(have, ", "), strings.Join(want, ", "), ConvertHint)
	}
	return nil
}

const tableExistsQuery = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema AND table_name = $1`

func tableExists(ctx context.Context, db DB, table string) (bool, error) {
	rows, err := db.Query(ctx, tableExistsQuery, table)
	if err != nil {
		return false, backend.Classify(ctx, "check schema", err)
	}
	defer rows.Close()
	found := rows.Next()
	if err := rows.Err(); err != nil {
		return false, backend.Classify(ctx, "check schema", err)
	}
	return found, nil
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
