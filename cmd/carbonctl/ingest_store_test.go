//go:build interop

package main

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/test/services"
)

// TestIngestIntoPostgres ingests the dataset's test files into a real
// PostgreSQL twice: the second run stores no new row, and the store holds
// every hour of both signals with the values the loader reads.
func TestIngestIntoPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := services.StartPostgres(t).Database(t)
	files := []string{
		filepath.Join("..", "..", "forecast", "dataset", "testdata", "SE.csv"),
		filepath.Join("..", "..", "forecast", "dataset", "testdata", "electricitymaps_DE_2021-01-01_hourly.csv"),
	}
	want := map[forecast.Zone]*dataset.Table{}
	total := 0
	for _, f := range files {
		tab, _, err := dataset.Loader{}.LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want[tab.Zone] = tab
		total += 2 * tab.Len()
	}

	for run := range 2 {
		var o, e bytes.Buffer
		args := append([]string{"ingest", "--store", url, "--migrate"}, files...)
		if code := Main(ctx, args, &o, &e); code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", run, code, o.String(), e.String())
		}
		for z, tab := range want {
			line := "store: zone " + string(z) + ": "
			if !strings.Contains(o.String(), line) || !strings.Contains(o.String(), line+itoa(2*tab.Len())+" rows upserted") {
				t.Fatalf("run %d: stdout lacks the row count of %s (%d):\n%s", run, z, 2*tab.Len(), o.String())
			}
		}
		if got := countObserved(t, url); got != total {
			t.Fatalf("run %d: %d rows in observed_signals, want %d", run, got, total)
		}
	}

	db, err := connect.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for z, tab := range want {
		for _, sig := range []forecast.Signal{forecast.SignalDirect, forecast.SignalLifecycle} {
			s, err := db.Observed(ctx, z, sig, tab.Start, tab.End())
			if err != nil {
				t.Fatal(err)
			}
			exp := tab.Series(sig).Values
			for i, v := range s.Values {
				if v != exp[i] || math.IsNaN(v) {
					t.Fatalf("%s %s hour %d: stored %v, loaded %v", z, sig, i, v, exp[i])
				}
			}
		}
	}
}

func countObserved(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM observed_signals").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }
