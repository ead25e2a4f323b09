package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/internal/pgwire"
)

// migrateLock is the key of the transaction-level advisory lock Migrate
// holds, so that several processes migrating at once do not race on the
// catalog (concurrent CREATE TABLE IF NOT EXISTS can fail).
const migrateLock int64 = 0x63617262_73746f72 // "carbstor"

// schema creates the store's tables; every statement is idempotent.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS observed_signals (
	zone       text             NOT NULL,
	signal     text             NOT NULL,
	time       timestamptz      NOT NULL,
	value      double precision NOT NULL,
	estimated  boolean          NOT NULL DEFAULT false,
	updated_at timestamptz      NOT NULL DEFAULT now(),
	PRIMARY KEY (zone, signal, time))`,
	`CREATE TABLE IF NOT EXISTS forecasts (
	zone          text             NOT NULL,
	signal        text             NOT NULL,
	model_name    text             NOT NULL,
	model_version text             NOT NULL,
	issued_at     timestamptz      NOT NULL,
	target_time   timestamptz      NOT NULL,
	value         double precision NOT NULL,
	lower         double precision,
	upper         double precision,
	PRIMARY KEY (zone, signal, model_name, model_version, issued_at, target_time))`,
	`CREATE TABLE IF NOT EXISTS backfill_checkpoints (
	job       text        NOT NULL,
	zone      text        NOT NULL,
	issued_at timestamptz NOT NULL,
	done_at   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (job, zone, issued_at))`,
}

// Migrate implements store.DB: it creates the tables that are absent, in
// one transaction under an advisory lock, so it is safe to run twice and
// from several processes at once. Existing tables are left as they are.
func (s *Store) Migrate(ctx context.Context) error {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
			return err
		}
		for _, stmt := range schema {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	return backend.Classify(ctx, "migrate", err)
}
