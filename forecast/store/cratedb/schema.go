package cratedb

import (
	"context"

	"github.com/carbongate/carbongate/internal/pgwire"
)

// ddl creates the store's tables, with the columns and primary keys of
// forecast/store/postgres in CrateDB's types. Every statement is
// idempotent.
var ddl = []string{
	`CREATE TABLE IF NOT EXISTS "observed_signals" (
   "zone" TEXT NOT NULL,
   "signal" TEXT NOT NULL,
   "time" TIMESTAMP WITH TIME ZONE NOT NULL,
   "value" DOUBLE PRECISION NOT NULL,
   "estimated" BOOLEAN NOT NULL DEFAULT false,
   "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP,
   PRIMARY KEY ("zone", "signal", "time")
)`,
	`CREATE TABLE IF NOT EXISTS "forecasts" (
   "zone" TEXT NOT NULL,
   "signal" TEXT NOT NULL,
   "model_name" TEXT NOT NULL,
   "model_version" TEXT NOT NULL,
   "issued_at" TIMESTAMP WITH TIME ZONE NOT NULL,
   "target_time" TIMESTAMP WITH TIME ZONE NOT NULL,
   "value" DOUBLE PRECISION NOT NULL,
   "lower" DOUBLE PRECISION,
   "upper" DOUBLE PRECISION,
   PRIMARY KEY ("zone", "signal", "model_name", "model_version", "issued_at", "target_time")
)`,
	`CREATE TABLE IF NOT EXISTS "backfill_checkpoints" (
   "job" TEXT NOT NULL,
   "zone" TEXT NOT NULL,
   "issued_at" TIMESTAMP WITH TIME ZONE NOT NULL,
   "done_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP,
   PRIMARY KEY ("job", "zone", "issued_at")
)`,
}

// Migrate implements store.DB: CREATE TABLE IF NOT EXISTS for each table.
// CrateDB has no advisory locks; a creation that loses a race with another
// process ("already exists") counts as done.
func (s *Store) Migrate(ctx context.Context) error {
	ctx, cancel := pgwire.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	for _, stmt := range ddl {
		if _, err := s.db.Exec(ctx, stmt); err != nil && !alreadyExists(err) {
			return backend.Classify(ctx, "migrate", err)
		}
	}
	return nil
}
