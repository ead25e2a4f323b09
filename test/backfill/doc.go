// Package backfill runs carbonctl backfill as a process against a real
// PostgreSQL (build tag interop): killed and resumed, with its OIP server
// dying, with the database restarting mid-write, and a benchmark against a
// plain COPY of the same rows.
package backfill
