//go:build interop

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/baseline"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/test/services"
)

// persistenceModels writes persistence models (lookback 24 h, horizon
// 96 h) of the direct signal for zones into a models dir.
func persistenceModels(t *testing.T, zones ...forecast.Zone) string {
	t.Helper()
	dir := t.TempDir()
	for _, z := range zones {
		m, err := baseline.NewPersistence(z, forecast.SignalDirect, 24, 96)
		if err != nil {
			t.Fatal(err)
		}
		if err := artifact.Save(workflow.ModelDir(dir, forecast.SignalDirect, z), m); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// openStore opens url's store with its tables.
func openTestStore(t *testing.T, url string) store.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := storeconnect.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// observe stores hourly observations of zone over [from, to), leaving out
// the hours in gap.
func observe(t *testing.T, db store.DB, zone forecast.Zone, from, to time.Time, gap ...time.Time) {
	t.Helper()
	skip := map[int64]bool{}
	for _, g := range gap {
		skip[g.Unix()] = true
	}
	var obs []store.Observation
	for tm := from; tm.Before(to); tm = tm.Add(time.Hour) {
		if !skip[tm.Unix()] {
			obs = append(obs, store.Observation{Time: tm, Value: 100 + float64(tm.Hour())})
		}
	}
	if err := db.UpsertObserved(context.Background(), zone, forecast.SignalDirect, obs); err != nil {
		t.Fatal(err)
	}
}

func forecastRows(t *testing.T, db store.DB) int {
	t.Helper()
	n := 0
	err := db.ReadForecasts(context.Background(), store.ForecastQuery{}, func(store.ForecastRow) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBackfillBadInputInterop(t *testing.T) {
	pg := services.StartPostgres(t)
	jan := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	models := persistenceModels(t, "DE", "SE")

	t.Run("model does not exist", func(t *testing.T) {
		url := pg.Database(t)
		db := openTestStore(t, url)
		observe(t, db, "DE", jan.AddDate(0, 0, -2), jan.AddDate(0, 1, 0))
		reg := filepath.Join(t.TempDir(), "registry.db")
		code, out, stderr := runCtl(t, "backfill", "--zones", "DE", "--from", "2021-01-01", "--to", "2021-01-10", "--signal", "direct",
			"--store", url, "--registry", reg, "--model", "models:/carbon-forecaster-{zone}@champion")
		if code != 1 || !strings.Contains(stderr, "--model models:/carbon-forecaster-{zone}@champion") {
			t.Errorf("exit %d, stderr:\n%s\nwant 1 naming --model", code, stderr)
		}
		if n := forecastRows(t, db); n != 0 || out != "" {
			t.Errorf("%d rows written, stdout %q", n, out)
		}
		code, _, stderr = runCtl(t, "backfill", "--zones", "PL", "--from", "2021-01-01", "--to", "2021-01-10", "--signal", "direct",
			"--store", url, "--models", persistenceModels(t, "DE"))
		if code != 1 || !strings.Contains(stderr, "--models") || !strings.Contains(stderr, "zones [PL]") {
			t.Errorf("models dir without the zone: exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("range without history", func(t *testing.T) {
		url := pg.Database(t)
		db := openTestStore(t, url)
		observe(t, db, "DE", jan.AddDate(0, 3, 0), jan.AddDate(0, 4, 0)) // April only
		code, _, stderr := runCtl(t, "backfill", "--zones", "DE,SE", "--from", "2021-01-01", "--to", "2021-01-31", "--signal", "direct",
			"--store", url, "--models", models)
		if code != 1 || !strings.Contains(stderr, "--from/--to") {
			t.Errorf("exit %d, stderr:\n%s\nwant 1 naming --from/--to", code, stderr)
		}
		if n := forecastRows(t, db); n != 0 {
			t.Errorf("%d rows written", n)
		}
	})

	t.Run("zone with gaps in the store", func(t *testing.T) {
		url := pg.Database(t)
		db := openTestStore(t, url)
		gapStart := jan.AddDate(0, 0, 5).Add(-3 * time.Hour) // 3 h before the Jan 6 issue
		var gap []time.Time
		for i := range 10 {
			gap = append(gap, gapStart.Add(time.Duration(i)*time.Hour))
		}
		observe(t, db, "DE", jan.AddDate(0, 0, -2), jan.AddDate(0, 1, 0), gap...)
		observe(t, db, "SE", jan.AddDate(0, 0, -2), jan.AddDate(0, 1, 0))
		code, out, stderr := runCtl(t, "backfill", "--zones", "DE,SE", "--from", "2021-01-01", "--to", "2021-01-10", "--signal", "direct",
			"--store", url, "--models", models)
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		// The gap (Jan 5 21:00 .. Jan 6 06:00) is in the 24 h windows of
		// the issues of Jan 6 and Jan 7 of DE.
		if !strings.Contains(out, "zone DE: 2 units skipped") || !strings.Contains(out, "18 units written, 2 skipped") {
			t.Errorf("stdout:\n%s", out)
		}
		if got, want := forecastRows(t, db), 18*96; got != want {
			t.Errorf("rows=%d, want %d", got, want)
		}
	})

	t.Run("zone with gaps in a data dir", func(t *testing.T) {
		url := pg.Database(t)
		db := openTestStore(t, url)
		data := t.TempDir()
		// DE's data starts on Jan 3: the issues of Jan 1..3 lack history.
		var csv strings.Builder
		csv.WriteString("datetime_utc,ci_direct,ci_lifecycle\n")
		for tm := jan.AddDate(0, 0, 2); tm.Before(jan.AddDate(0, 0, 12)); tm = tm.Add(time.Hour) {
			fmt.Fprintf(&csv, "%s,%d,%d\n", tm.Format(time.RFC3339), 200+tm.Hour(), 300+tm.Hour())
		}
		if err := os.WriteFile(filepath.Join(data, "DE.csv"), []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runCtl(t, "backfill", "--zones", "DE", "--from", "2021-01-01", "--to", "2021-01-10", "--signal", "direct",
			"--store", url, "--models", models, "--data", data)
		if code != 0 || !strings.Contains(out, "zone DE: 3 units skipped") || !strings.Contains(out, "7 units written") {
			t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
		}
		if got, want := forecastRows(t, db), 7*96; got != want {
			t.Errorf("rows=%d, want %d", got, want)
		}
		// Every unit in a gap (its window half before the data): exit 1.
		code, _, stderr = runCtl(t, "backfill", "--zones", "DE", "--from", "2021-01-03T12:00:00Z", "--to", "2021-01-03T12:00:00Z", "--signal", "direct",
			"--store", url, "--models", models, "--data", data, "--job", "all-gaps")
		if code != 1 || !strings.Contains(stderr, "gap") {
			t.Errorf("all units in gaps: exit %d, stderr:\n%s", code, stderr)
		}
	})
}
