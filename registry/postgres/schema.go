package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
)

// Revision is the alembic revision Migrate records: the head of MLflow
// 2.8.0, which added model_versions.storage_location. MLflow's registry
// tables then stayed as Migrate creates them until 3.10 added workspace
// columns (1b5f0d9ad7c1), apart from model_version_tags.value, widened to
// TEXT by bda7b8c39065 (the store reads either).
const Revision = "acf3f17fdcc7"

// Names of what carbongate adds next to MLflow's tables.
const (
	// NotifyChannel is the LISTEN/NOTIFY channel; the payload is the
	// registered model's name.
	NotifyChannel = "carbongate_aliases"
	// TriggerName names the trigger on registered_model_aliases and its
	// function.
	TriggerName = "carbongate_aliases_notify"
)

// registryTables are MLflow's model-registry tables, parents first.
var registryTables = []string{
	"registered_models", "model_versions", "registered_model_tags",
	"model_version_tags", "registered_model_aliases",
}

// SchemaInfo describes what a database holds.
type SchemaInfo struct {
	// Tables: all of MLflow's registry tables exist. Missing lists those
	// absent, in creation order.
	Tables  bool
	Missing []string
	// Revision is alembic_version's revision ("" when there is none;
	// several heads are comma-joined).
	Revision string
	// Workspace: the tables carry MLflow 3.10's workspace column (every
	// query then works in workspace 'default').
	Workspace bool
	// Tracking: MLflow's tracking tables exist too, i.e. MLflow created
	// this database (Migrate alone creates only the registry tables).
	Tracking bool
	// Trigger: carbongate's NOTIFY trigger is installed.
	Trigger bool
}

// layout is what queries adapt to.
type layout struct {
	workspace       bool // MLflow >= 3.10: workspace in every key
	storageLocation bool // MLflow >= 2.8
}

// schemaState is SchemaInfo plus what only this package needs.
type schemaState struct {
	SchemaInfo
	alembic bool // an alembic_version table exists
	layout  layout
}

// detect reads the catalog; tables are looked up on the search_path, as
// the queries find them.
func detect(ctx context.Context, q querier) (schemaState, error) {
	var st schemaState
	exists := make([]bool, len(registryTables))
	dest := []any{&st.Tracking, &st.alembic, &st.Workspace, &st.layout.storageLocation, &st.Trigger}
	for i := range exists {
		dest = append(dest, &exists[i])
	}
	err := q.QueryRow(ctx, `
SELECT to_regclass('experiments') IS NOT NULL,
       to_regclass('alembic_version') IS NOT NULL,
       EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('registered_models')
               AND attname = 'workspace' AND NOT attisdropped),
       EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('model_versions')
               AND attname = 'storage_location' AND NOT attisdropped),
       EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('registered_model_aliases')
               AND tgname = $1),
       to_regclass('registered_models') IS NOT NULL,
       to_regclass('model_versions') IS NOT NULL,
       to_regclass('registered_model_tags') IS NOT NULL,
       to_regclass('model_version_tags') IS NOT NULL,
       to_regclass('registered_model_aliases') IS NOT NULL`, TriggerName).Scan(dest...)
	if err != nil {
		return st, err
	}
	for i, ok := range exists {
		if !ok {
			st.Missing = append(st.Missing, registryTables[i])
		}
	}
	st.Tables = len(st.Missing) == 0
	st.layout.workspace = st.Workspace
	if st.alembic {
		rows, err := q.Query(ctx, `SELECT version_num FROM alembic_version ORDER BY version_num`)
		if err != nil {
			return st, err
		}
		revs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return st, err
		}
		st.Revision = strings.Join(revs, ",")
	}
	return st, nil
}

// Schema reports which of MLflow's tables the database holds and in which
// layout. Calls after a change (Migrate, an MLflow upgrade) see it.
func (s *Store) Schema(ctx context.Context) (SchemaInfo, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	st, err := detect(ctx, s.pool)
	if err != nil {
		return SchemaInfo{}, backend.Classify(ctx, "schema", err)
	}
	s.mu.Lock()
	s.lay = nil
	if st.Tables {
		s.lay = &st.layout
	}
	s.mu.Unlock()
	return st.SchemaInfo, nil
}

// layout returns the detected layout, detecting it if needed; EUNAVAILABLE
// while the tables are missing.
func (s *Store) layout(ctx context.Context) (layout, error) {
	s.mu.Lock()
	l := s.lay
	s.mu.Unlock()
	if l != nil {
		return *l, nil
	}
	st, err := detect(ctx, s.pool)
	if err != nil {
		return layout{}, backend.Classify(ctx, "schema", err)
	}
	if !st.Tables {
		return layout{}, forecast.Errorf(forecast.EUNAVAILABLE,
			"MLflow's registry tables are missing (%s): run `carbonctl registry migrate`, or point carbongate at MLflow's database",
			strings.Join(st.Missing, ", "))
	}
	s.mu.Lock()
	s.lay = &st.layout
	s.mu.Unlock()
	return st.layout, nil
}

// migrateLock serialises Migrate and InstallTrigger across processes
// (pg_advisory_xact_lock key; any constant unlikely to collide).
const migrateLock = 0x6361726267617465 // "carbgate"

// Migrate prepares the database at url for carbongate, in one transaction:
// when MLflow's registry tables are all absent it creates them as MLflow
// (2.8 to 3.9) lays them out on PostgreSQL, with alembic_version at
// Revision; when they all exist (MLflow's, in any layout) it leaves them
// as they are. Either way it then installs carbongate's NOTIFY trigger
// (InstallTrigger). It refuses (ECONFLICT) a database holding only some of
// the tables, or an alembic_version without them (another application's
// migrations). A database Migrate created serves carbongate; an MLflow
// server expects its tracking tables too, so let MLflow create a database
// both share (mlflow db upgrade) and run Migrate on it afterwards.
func Migrate(ctx context.Context, url string) error {
	cfg, err := backend.ParseConfig(url)
	if err != nil {
		return err
	}
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return backend.Classify(ctx, "migrate", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return backend.Classify(ctx, "migrate", pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		st, err := detect(ctx, tx)
		if err != nil {
			return err
		}
		switch {
		case st.Tables:
			return installTrigger(ctx, tx)
		case len(st.Missing) < len(registryTables):
			return forecast.Errorf(forecast.ECONFLICT,
				"the database holds some of MLflow's registry tables but not %s: upgrade it with `mlflow db upgrade`; carbongate does not alter MLflow's tables",
				strings.Join(st.Missing, ", "))
		case st.alembic:
			return forecast.Errorf(forecast.ECONFLICT,
				"the database has an alembic_version (revision %q) but no MLflow registry tables: it belongs to another application; use a database of its own",
				st.Revision)
		}
		if _, err := tx.Exec(ctx, createTables); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO alembic_version (version_num) VALUES ($1)`, Revision); err != nil {
			return err
		}
		return installTrigger(ctx, tx)
	}))
}

// createTables is MLflow's registry DDL as its alembic migrations leave it
// on PostgreSQL at Revision: names, types, keys and foreign keys (ON UPDATE
// CASCADE carries a rename to every child row). MLflow also declares
// registered_models.name UNIQUE; PostgreSQL drops a unique constraint that
// repeats the primary key, so there is none here either.
const createTables = `
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL,
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
CREATE TABLE registered_models (
	name VARCHAR(256) NOT NULL,
	creation_time BIGINT,
	last_updated_time BIGINT,
	description VARCHAR(5000),
	CONSTRAINT registered_model_pk PRIMARY KEY (name)
);
CREATE TABLE model_versions (
	name VARCHAR(256) NOT NULL,
	version INTEGER NOT NULL,
	creation_time BIGINT,
	last_updated_time BIGINT,
	description VARCHAR(5000),
	user_id VARCHAR(256),
	current_stage VARCHAR(20),
	source VARCHAR(500),
	run_id VARCHAR(32),
	status VARCHAR(20),
	status_message VARCHAR(500),
	run_link VARCHAR(500),
	storage_location VARCHAR(500),
	CONSTRAINT model_version_pk PRIMARY KEY (name, version),
	CONSTRAINT model_versions_name_fkey FOREIGN KEY (name)
		REFERENCES registered_models (name) ON UPDATE CASCADE
);
CREATE TABLE registered_model_tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(5000),
	name VARCHAR(256) NOT NULL,
	CONSTRAINT registered_model_tag_pk PRIMARY KEY (key, name),
	CONSTRAINT registered_model_tags_name_fkey FOREIGN KEY (name)
		REFERENCES registered_models (name) ON UPDATE CASCADE
);
CREATE TABLE model_version_tags (
	key VARCHAR(250) NOT NULL,
	value VARCHAR(5000),
	name VARCHAR(256) NOT NULL,
	version INTEGER NOT NULL,
	CONSTRAINT model_version_tag_pk PRIMARY KEY (key, name, version),
	CONSTRAINT model_version_tags_name_version_fkey FOREIGN KEY (name, version)
		REFERENCES model_versions (name, version) ON UPDATE CASCADE
);
CREATE TABLE registered_model_aliases (
	alias VARCHAR(256) NOT NULL,
	version INTEGER NOT NULL,
	name VARCHAR(256) NOT NULL,
	CONSTRAINT registered_model_alias_pk PRIMARY KEY (name, alias),
	CONSTRAINT registered_model_alias_name_fkey FOREIGN KEY (name)
		REFERENCES registered_models (name) ON UPDATE CASCADE ON DELETE CASCADE
);`

// InstallTrigger installs (or replaces) carbongate's trigger on
// registered_model_aliases: after every insert, update or delete it sends
// NOTIFY on NotifyChannel with the model's name. It adds a function and a
// trigger and changes none of MLflow's tables or rows. ENOTFOUND when the
// table does not exist.
func (s *Store) InstallTrigger(ctx context.Context) error {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	return backend.Classify(ctx, "install trigger", pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		return installTrigger(ctx, tx)
	}))
}

func installTrigger(ctx context.Context, tx pgx.Tx) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass('registered_model_aliases') IS NOT NULL`).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return forecast.Errorf(forecast.ENOTFOUND, "table registered_model_aliases not found: run `carbonctl registry migrate` or MLflow's `mlflow db upgrade` first")
	}
	_, err := tx.Exec(ctx, `
CREATE OR REPLACE FUNCTION `+TriggerName+`() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
	IF TG_OP = 'DELETE' THEN
		PERFORM pg_notify('`+NotifyChannel+`', OLD.name);
	ELSE
		PERFORM pg_notify('`+NotifyChannel+`', NEW.name);
	END IF;
	RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS `+TriggerName+` ON registered_model_aliases;
CREATE TRIGGER `+TriggerName+`
	AFTER INSERT OR UPDATE OR DELETE ON registered_model_aliases
	FOR EACH ROW EXECUTE FUNCTION `+TriggerName+`();`)
	return err
}
