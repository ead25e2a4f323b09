//go:build interop

package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/postgres"
	"github.com/carbongate/carbongate/forecast/store/storetest"
	"github.com/carbongate/carbongate/test/services"
)

// batch returns zones × days × 96 h of forecasts of model, with one unit
// per (zone, day).
func batch(model string, zones []forecast.Zone, days int) ([]store.Unit, []store.ForecastRow) {
	var units []store.Unit
	var rows []store.ForecastRow
	for _, z := range zones {
		for d := range days {
			units = append(units, store.Unit{Zone: z, IssuedAt: storetest.Hour(24 * d)})
			for l := range 96 {
				rows = append(rows, storetest.Row(z, model, "1", 24*d, l, l%2 == 0))
			}
		}
	}
	return units, rows
}

func count(t *testing.T, s *postgres.Store, model string) int {
	t.Helper()
	n := 0
	err := s.ReadForecasts(context.Background(), store.ForecastQuery{ModelName: model}, func(store.ForecastRow) error { n++; return nil })
	if err != nil {
		t.Fatalf("count rows: %v", err)
	}
	return n
}

// TestRestartMidWrite stops the server while WriteForecasts is copying or
// upserting: afterwards the batch and its checkpoints are either all there
// or not at all, and a retry after the restart writes it all.
func TestRestartMidWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := services.StartPrivatePostgres(t)
	s, err := postgres.Open(ctx, pg.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	zones := []forecast.Zone{"DE", "SE", "FR", "PL", "ES", "IT"}
	warmUnits, warm := batch("warm", zones, 60)
	start := time.Now()
	if err := s.WriteForecasts(ctx, "warm", warmUnits, warm); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%d rows written in %v", len(warm), took)

	units, rows := batch("cut", zones, 60)
	interrupted := false
	for attempt, frac := range []float64{0.5, 0.3, 0.15, 0.05} {
		done := make(chan error, 1)
		go func() { done <- s.WriteForecasts(ctx, "cut", units, rows) }()
		time.Sleep(time.Duration(frac * float64(took)))
		pg.Stop(t)
		werr := <-done
		pg.Start(t)
		n := count(t, s, "cut")
		got, err := s.Done(ctx, "cut")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("attempt %d: stopped after %.0f%% of a write: err=%v, %d rows, %d units visible", attempt, 100*frac, werr, n, len(got))
		switch {
		case werr != nil && forecast.ErrorCode(werr) != forecast.EUNAVAILABLE:
			t.Fatalf("error code=%q, want %s (err: %v)", forecast.ErrorCode(werr), forecast.EUNAVAILABLE, werr)
		case werr != nil && (n != 0 || len(got) != 0):
			t.Fatalf("failed write left %d rows and %d units visible", n, len(got))
		case werr == nil && (n != len(rows) || len(got) != len(units)):
			t.Fatalf("successful write shows %d rows and %d units, want %d and %d", n, len(got), len(rows), len(units))
		}
		if werr != nil {
			interrupted = true
			break
		}
	}
	if !interrupted {
		t.Fatal("no write was interrupted by the restart")
	}
	// The pool may hand out connections the restart killed: retry as a
	// backfill would.
	for try := 0; ; try++ {
		err := s.WriteForecasts(ctx, "cut", units, rows)
		if err == nil {
			break
		}
		if try == 5 || forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
			t.Fatalf("retry %d after restart: %v", try, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := count(t, s, "cut"); n != len(rows) {
		t.Fatalf("%d rows after the retry, want %d", n, len(rows))
	}
	if n := count(t, s, "warm"); n != len(warm) {
		t.Fatalf("%d rows of the earlier batch, want %d", n, len(warm))
	}
}
