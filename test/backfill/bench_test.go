//go:build interop

package backfill

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models/backfill"
	"github.com/carbongate/carbongate/test/testsupport"
)

// copyGoal is the least backfill rate, as a fraction of the database's own
// bulk load of the same rows, the benchmark accepts.
const copyGoal = 0.7

// BenchmarkBackfillVsCopy backfills 12 zones × 366 daily 96 h forecasts
// (2020-01-08 .. 2021-01-07, 421,632 rows) into each backend with models
// run in process, then bulk-loads the same rows with the database's own
// COPY into an identically defined table, in the same database and run,
// and prints both rates and their ratio on a line per backend. A ratio
// below copyGoal fails the benchmark (and make bench).
func BenchmarkBackfillVsCopy(b *testing.B) {
	models := trainDirect(b)
	tables, err := bundled.Load()
	if err != nil {
		b.Fatal(err)
	}
	zs := make([]forecast.Zone, len(zones))
	for i, z := range zones {
		zs[i] = forecast.Zone(z)
	}
	ms, err := backfill.FromDir(models, forecast.SignalDirect, zs)
	if err != nil {
		b.Fatal(err)
	}
	plan := backfill.Plan{Zones: zs, From: time.Date(2020, 1, 8, 0, 0, 0, 0, time.UTC), To: time.Date(2021, 1, 7, 0, 0, 0, 0, time.UTC),
		Every: 24 * time.Hour, Horizon: 96 * time.Hour}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			var bfRate, copyRate float64
			var rows, writes int
			b.ReportAllocs()
			for b.Loop() {
				writes = 0
				url := be.store(b)
				db, err := storeconnect.Open(ctx, url)
				if err != nil {
					b.Fatal(err)
				}
				if err := db.Migrate(ctx); err != nil {
					b.Fatal(err)
				}
				res, err := backfill.Run(ctx, backfill.Config{
					Plan: plan, Signal: forecast.SignalDirect, Job: "bench", Models: ms,
					History: backfill.TableHistory[*dataset.Table]{Tables: tables}, Store: db,
					OnWrite: func(int, int) { writes++ },
				})
				db.Close()
				if err != nil {
					b.Fatal(err)
				}
				rows = res.Rows
				bfRate = float64(res.Rows) / res.Elapsed.Seconds()
				n, d := be.copy(b, url)
				if n != rows {
					b.Fatalf("%s loaded %d rows, backfill wrote %d", be.copyName, n, rows)
				}
				copyRate = float64(n) / d.Seconds()
			}
			b.ReportMetric(bfRate, "backfill_rows/s")
			b.ReportMetric(copyRate, "copy_rows/s")
			ratio := bfRate / copyRate
			testsupport.Goal(b, ratio >= copyGoal, "backfill into %s: %d rows (12 zones x 366 days x 96 h) in %d writes, %.0f rows/s; %s of the same rows: %.0f rows/s; ratio %.2f (goal >= %.2f)",
				be.name, rows, writes, bfRate, be.copyName, copyRate, ratio, copyGoal)
		})
	}
}

// pgCopy writes the backfilled rows as CSV and COPYs them into
// forecasts_plain, defined like forecasts with the same primary key, and
// returns the rows loaded and the COPY's duration.
func pgCopy(b *testing.B, url string) (int, time.Duration) {
	b.Helper()
	ctx := context.Background()
	c := connect(ctx, b, url)
	defer c.Close(ctx)
	var csv bytes.Buffer
	if _, err := c.PgConn().CopyTo(ctx, &csv, "COPY forecasts TO STDOUT (FORMAT csv)"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE forecasts_plain (LIKE forecasts INCLUDING ALL)"); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	tag, err := c.PgConn().CopyFrom(ctx, &csv, "COPY forecasts_plain FROM STDIN (FORMAT csv)")
	d := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	return int(tag.RowsAffected()), d
}

// crateCopy has CrateDB write the backfilled rows as JSON lines to files
// (COPY TO DIRECTORY) and load them with COPY FROM into forecasts_plain,
// created by forecasts' own SHOW CREATE TABLE under the other name (same
// primary key, shards and settings). It returns the rows the table holds
// after the load and the duration of COPY FROM and the REFRESH that makes
// them visible (a backfill's rows are visible when it returns).
func crateCopy(b *testing.B, url string) (int, time.Duration) {
	b.Helper()
	ctx := context.Background()
	c := connect(ctx, b, url)
	defer c.Close(ctx)
	// The server runs as an unprivileged user: it must write and read the dir.
	dir, err := os.MkdirTemp("", "carbongate-crate-copy-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, "COPY forecasts TO DIRECTORY '"+dir+"'"); err != nil {
		b.Fatal(err)
	}
	var ddl string
	if err := c.QueryRow(ctx, "SHOW CREATE TABLE forecasts").Scan(&ddl); err != nil {
		b.Fatal(err)
	}
	plain := strings.Replace(ddl, `."forecasts"`, `."forecasts_plain"`, 1)
	if plain == ddl {
		b.Fatalf("SHOW CREATE TABLE forecasts names no table forecasts:\n%s", ddl)
	}
	if _, err := c.Exec(ctx, plain); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if _, err := c.Exec(ctx, "COPY forecasts_plain FROM 'file://"+dir+"/*'"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Exec(ctx, "REFRESH TABLE forecasts_plain"); err != nil {
		b.Fatal(err)
	}
	d := time.Since(t0)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM forecasts_plain").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n, d
}
