// Package backfill runs carbonctl backfill as a process against a real
// PostgreSQL and a real CrateDB (build tag interop): killed and resumed,
// with the database restarting mid-write, on both; with its OIP server
// dying, on PostgreSQL; and a benchmark against each database's own COPY
// of the same rows.
package backfill
