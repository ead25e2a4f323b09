//go:build interop

package backfill

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models/backfill"
	"github.com/carbongate/carbongate/test/services"
)

// BenchmarkBackfillVsCopy backfills 12 zones × 366 daily 96 h forecasts
// (2020-01-08 .. 2021-01-07, ~420k rows) into PostgreSQL with models run in
// process, then COPYs the same rows as CSV into an identically defined
// table, in the same database and run, and prints both rates and their
// ratio (goal ≥ 0.7) on the last line.
func BenchmarkBackfillVsCopy(b *testing.B) {
	pg := services.StartPostgres(b)
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
	ctx := context.Background()
	var bfRate, copyRate float64
	var rows int
	b.ReportAllocs()
	for b.Loop() {
		url := pg.Database(b)
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
		})
		db.Close()
		if err != nil {
			b.Fatal(err)
		}
		rows = res.Rows
		bfRate = float64(res.Rows) / res.Elapsed.Seconds()
		n, d := plainCopy(b, url)
		if n != rows {
			b.Fatalf("plain COPY loaded %d rows, backfill wrote %d", n, rows)
		}
		copyRate = float64(n) / d.Seconds()
	}
	b.ReportMetric(bfRate, "backfill_rows/s")
	b.ReportMetric(copyRate, "copy_rows/s")
	fmt.Printf("backfill into PostgreSQL: %d rows (12 zones x 366 days x 96 h), %.0f rows/s; plain COPY of the same rows as CSV: %.0f rows/s; ratio %.2f (goal >= 0.70)\n",
		rows, bfRate, copyRate, bfRate/copyRate)
}

// plainCopy writes the backfilled rows as CSV and COPYs them into
// forecasts_plain, defined like forecasts with the same primary key, and
// returns the rows loaded and the COPY's duration.
func plainCopy(b *testing.B, url string) (int, time.Duration) {
	b.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
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
