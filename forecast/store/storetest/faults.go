package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// Options describe what a store cannot be put through.
type Options struct {
	// Except names fault cases not to run ("Unmigrated", "Closed"), each
	// with the reason, which is logged (e.g. Memory has no tables and no
	// connection).
	Except map[string]string
	// Unreachable opens a store on a server that refuses connections:
	// either it fails or every call does, with EUNAVAILABLE. Nil for a
	// store without a server: the case is logged as not run.
	Unreachable func(t *testing.T) (store.DB, error)
	// Unauthorized opens a store with credentials the server refuses:
	// either it fails or every call does, with EUNAUTHORIZED. Nil for a
	// store without credentials: the case is logged as not run.
	Unauthorized func(t *testing.T) (store.DB, error)
}

// The fault cases: a fault of the database (tables never created, store
// closed, server down) is EUNAVAILABLE on every backend, so that readers
// fall back and writers retry; never ENOTFOUND, which Last and Observed
// answer for a zone without data. Credentials the server refuses are
// EUNAUTHORIZED on every backend.

// someCalls are one call of each method of store.DB but Migrate.
func someCalls(db store.DB) []struct {
	note string
	call func(ctx context.Context) error
} {
	r := Row("DE", "m", "1", 0, 0, false)
	return []struct {
		note string
		call func(ctx context.Context) error
	}{
		{"WriteForecasts", func(ctx context.Context) error {
			return db.WriteForecasts(ctx, "job", []store.Unit{{Zone: r.Zone, IssuedAt: r.IssuedAt}}, []store.ForecastRow{r})
		}},
		{"Done", func(ctx context.Context) error { _, err := db.Done(ctx, "job"); return err }},
		{"ReadForecasts", func(ctx context.Context) error {
			return db.ReadForecasts(ctx, store.ForecastQuery{}, func(store.ForecastRow) error { return nil })
		}},
		{"UpsertObserved", func(ctx context.Context) error {
			return db.UpsertObserved(ctx, "DE", forecast.SignalLifecycle, Obs(0, 1))
		}},
		{"LatestObserved", func(ctx context.Context) error {
			_, _, err := db.LatestObserved(ctx, "DE", forecast.SignalLifecycle)
			return err
		}},
		{"Observed", func(ctx context.Context) error {
			_, err := db.Observed(ctx, "DE", forecast.SignalLifecycle, Hour(0), Hour(2))
			return err
		}},
		{"Last", func(ctx context.Context) error {
			_, err := db.Last(ctx, "DE", forecast.SignalLifecycle, Hour(2), 2)
			return err
		}},
	}
}

// wantEvery fails t unless every call of someCalls on db fails with code
// and a message that contains hint.
func wantEvery(t *testing.T, db store.DB, code, fault, hint string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range someCalls(db) {
		err := c.call(ctx)
		if got := forecast.ErrorCode(err); got != code {
			t.Fatalf("%s %s: %v (code %q), want %q", c.note, fault, err, got, code)
		}
		if !strings.Contains(forecast.ErrorMessage(err), hint) {
			t.Fatalf("%s %s: message %q does not say %q", c.note, fault, forecast.ErrorMessage(err), hint)
		}
	}
}

// testUnmigrated: before Migrate every call is EUNAVAILABLE and says to
// migrate.
func testUnmigrated(t *testing.T, db store.DB) {
	wantEvery(t, db, forecast.EUNAVAILABLE, "before Migrate", "migrate")
}

// testClosed: after Close every call is EUNAVAILABLE, and Close may be
// called again.
func testClosed(t *testing.T, db store.DB) {
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	upsert(t, db, "DE", forecast.SignalLifecycle, Obs(0, 1))
	db.Close()
	wantEvery(t, db, forecast.EUNAVAILABLE, "after Close", "")
}

// openFault returns the case of a store open gives, which has a fault: it
// fails to open or fails every call, with code; nil when open is nil.
func openFault(open func(t *testing.T) (store.DB, error), code, fault string) func(t *testing.T) {
	if open == nil {
		return nil
	}
	return func(t *testing.T) {
		db, err := open(t)
		if err != nil {
			if got := forecast.ErrorCode(err); got != code {
				t.Fatalf("open %s: %v (code %q), want %q", fault, err, got, code)
			}
			return
		}
		defer db.Close()
		wantEvery(t, db, code, fault, "")
	}
}
