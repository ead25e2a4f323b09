//go:build interop

package postgres

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/test/services"
)

// benchRows returns zones × days daily forecasts of 96 hours (~100k rows
// for 12 zones × 90 days), in key order, half of them with an interval.
func benchRows(zones, days int) []store.ForecastRow {
	t0 := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := make([]store.ForecastRow, 0, zones*days*96)
	for z := range zones {
		for d := range days {
			at := t0.Add(time.Duration(24*d) * time.Hour)
			for l := range 96 {
				v := 100 + float64(z) + float64(d)/7 + float64(l)/3
				r := store.ForecastRow{Zone: forecast.Zone(fmt.Sprintf("Z%02d", z)), Signal: forecast.SignalLifecycle,
					ModelName: "carbon-forecaster-generic", ModelVersion: "3", IssuedAt: at,
					TargetTime: at.Add(time.Duration(l) * time.Hour), Value: v, Lower: math.NaN(), Upper: math.NaN()}
				if l%2 == 0 {
					r.Lower, r.Upper = v-12.5, v+12.5
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// csvOf is rows as the CSV a plain COPY reads (empty field = NULL).
func csvOf(rows []store.ForecastRow) []byte {
	var b bytes.Buffer
	for _, r := range rows {
		b.WriteString(string(r.Zone) + "," + string(r.Signal) + "," + r.ModelName + "," + r.ModelVersion + ",")
		b.WriteString(r.IssuedAt.Format(time.RFC3339) + "," + r.TargetTime.Format(time.RFC3339) + ",")
		b.WriteString(strconv.FormatFloat(r.Value, 'g', -1, 64) + ",")
		if r.HasInterval() {
			b.WriteString(strconv.FormatFloat(r.Lower, 'g', -1, 64) + "," + strconv.FormatFloat(r.Upper, 'g', -1, 64))
		} else {
			b.WriteString(",")
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkWriteForecasts compares WriteForecasts (staging table, upsert,
// checkpoints, one transaction) with a plain COPY of the same rows as CSV
// into a table of the same layout and primary key, both into empty tables
// of one database in one process, and prints rows/s of each and their
// ratio on the last line.
func BenchmarkWriteForecasts(b *testing.B) {
	ctx := context.Background()
	url := services.StartPostgres(b).Database(b)
	s, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE forecasts_plain (LIKE forecasts INCLUDING ALL)"); err != nil {
		b.Fatal(err)
	}
	rows := benchRows(12, 90)
	var units []store.Unit
	for i := 0; i < len(rows); i += 96 {
		units = append(units, store.Unit{Zone: rows[i].Zone, IssuedAt: rows[i].IssuedAt})
	}
	csv := csvOf(rows)
	truncate := func(b *testing.B, tables string) {
		if _, err := conn.Exec(ctx, "TRUNCATE "+tables); err != nil {
			b.Fatal(err)
		}
	}
	copyCSV := func() error {
		_, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(csv), "COPY forecasts_plain FROM STDIN (FORMAT csv)")
		return err
	}
	timed := func(b *testing.B, f func() error) time.Duration {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// Each iteration times both into empty tables, in alternating order, so
	// that load from elsewhere on the machine hits both alike.
	ratios := map[string]float64{}
	for _, mode := range []struct {
		name string
		m    stagingMode
	}{{"session_staging", stagingSession}, {"drop_staging", stagingDrop}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			s.staging = mode.m
			write := func() error { return s.WriteForecasts(ctx, "bench", units, rows) }
			var plain, ours time.Duration
			i := 0
			for b.Loop() {
				truncate(b, "forecasts_plain, forecasts, backfill_checkpoints")
				if i%2 == 0 {
					plain += timed(b, copyCSV)
					ours += timed(b, write)
				} else {
					ours += timed(b, write)
					plain += timed(b, copyCSV)
				}
				i++
			}
			n := float64(i * len(rows))
			b.ReportMetric(n/plain.Seconds(), "copy_rows/s")
			b.ReportMetric(n/ours.Seconds(), "write_rows/s")
			ratios[mode.name] = plain.Seconds() / ours.Seconds()
			b.ReportMetric(ratios[mode.name], "ratio")
		})
	}
	s.staging = stagingSession
	// Re-writing rows already stored (changed values) takes the upsert
	// path; reported for reference against a plain COPY into an empty table.
	changed := slices.Clone(rows)
	for i := range changed {
		changed[i].Value++
	}
	b.Run("rewrite_upsert", func(b *testing.B) {
		b.ReportAllocs()
		var plain, ours time.Duration
		i := 0
		for b.Loop() {
			truncate(b, "forecasts_plain, forecasts, backfill_checkpoints")
			if err := s.WriteForecasts(ctx, "bench", units, rows); err != nil {
				b.Fatal(err)
			}
			plain += timed(b, copyCSV)
			ours += timed(b, func() error { return s.WriteForecasts(ctx, "bench", units, changed) })
			i++
		}
		n := float64(i * len(rows))
		b.ReportMetric(n/ours.Seconds(), "write_rows/s")
		ratios["rewrite"] = plain.Seconds() / ours.Seconds()
		b.ReportMetric(ratios["rewrite"], "ratio")
	})
	fmt.Printf("rewrite of %d stored rows (upsert path): ratio %.2f\n", len(rows), ratios["rewrite"])
	fmt.Printf("%d rows: WriteForecasts rows/s ÷ plain COPY csv rows/s = %.2f (session staging table), %.2f (staging table per transaction)\n",
		len(rows), ratios["session_staging"], ratios["drop_staging"])
}
