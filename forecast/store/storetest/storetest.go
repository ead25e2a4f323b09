// Package storetest is the conformance suite of store.DB: every
// implementation (Memory, PostgreSQL, …) runs the same tests through Run, so
// they agree on upserts, ordering, filters, checkpoints, gaps and errors.
package storetest

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// T0 is the first hour the tests write.
var T0 = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)

// Run runs the conformance suite. open returns a store on an empty
// database of the test's own (tables not created: the suite calls
// Migrate, after checking what a store answers before it) and arranges for
// it to be closed (Close may be called twice) and dropped in t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) store.DB, opts Options) {
	t.Helper()
	fresh := func(t *testing.T) store.DB {
		t.Helper()
		db := open(t)
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return db
	}
	tests := []struct {
		name string
		run  func(t *testing.T, db store.DB)
	}{
		{"RewriteIsIdempotent", testRewrite},
		{"DuplicateKeysInOneCall", testDuplicateKeys},
		{"IntervalNaNRoundTrip", testIntervalNaN},
		{"ReadOrder", testReadOrder},
		{"QueryFilters", testQueryFilters},
		{"ReadStopsOnCallbackError", testReadStops},
		{"Checkpoints", testCheckpoints},
		{"BadRowWritesNothing", testBadRow},
		{"ConcurrentWriters", testConcurrentWriters},
		{"ObservedGaps", testObservedGaps},
		{"ObservedReplace", testObservedReplace},
		{"BadObservationsStoreNothing", testBadObservations},
		{"LastErrors", testLastErrors},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, fresh(t))
		})
	}
	t.Run("MigrateTwiceAndConcurrently", func(t *testing.T) {
		t.Parallel()
		testMigrate(t, open(t))
	})
	faults := []struct {
		name string
		run  func(t *testing.T) // nil: Options has no opener for it
	}{
		{"Unmigrated", func(t *testing.T) { testUnmigrated(t, open(t)) }},
		{"Closed", func(t *testing.T) { testClosed(t, open(t)) }},
		{"Unreachable", openFault(opts.Unreachable, forecast.EUNAVAILABLE, "with the server unreachable")},
		{"Unauthorized", openFault(opts.Unauthorized, forecast.EUNAUTHORIZED, "with credentials the server refuses")},
	}
	for _, f := range faults {
		why, ok := opts.Except[f.name]
		if !ok && f.run == nil {
			why, ok = "the store has no opener for it", true
		}
		if ok {
			t.Logf("storetest: %s not run: %s", f.name, why)
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			f.run(t)
		})
	}
}

// Row returns a forecast row of zone issued at T0 + issued hours for
// T0 + issued + lead hours, with a value that tells them apart and an
// interval unless noInterval.
func Row(zone forecast.Zone, model, version string, issued, lead int, noInterval bool) store.ForecastRow {
	at := T0.Add(time.Duration(issued) * time.Hour)
	v := 100 + float64(issued) + float64(lead)/100
	r := store.ForecastRow{
		Zone: zone, Signal: forecast.SignalLifecycle, ModelName: model, ModelVersion: version,
		IssuedAt: at, TargetTime: at.Add(time.Duration(lead) * time.Hour),
		Value: v, Lower: v - 10, Upper: v + 10,
	}
	if noInterval {
		r.Lower, r.Upper = math.NaN(), math.NaN()
	}
	return r
}

// ReadAll returns every row q selects, in the order the store gives them.
func ReadAll(tb testing.TB, f store.Forecasts, q store.ForecastQuery) []store.ForecastRow {
	tb.Helper()
	var out []store.ForecastRow
	if err := f.ReadForecasts(context.Background(), q, func(r store.ForecastRow) error {
		out = append(out, r)
		return nil
	}); err != nil {
		tb.Fatalf("ReadForecasts: %v", err)
	}
	return out
}

// Write calls WriteForecasts and fails tb on error.
func Write(tb testing.TB, f store.Forecasts, job string, units []store.Unit, rows []store.ForecastRow) {
	tb.Helper()
	if err := f.WriteForecasts(context.Background(), job, units, rows); err != nil {
		tb.Fatalf("WriteForecasts: %v", err)
	}
}

// SameRow reports whether two rows are equal, NaN bounds equal to NaN and
// times compared as instants.
func SameRow(a, b store.ForecastRow) bool {
	same := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return a.Key() == b.Key() && a.Value == b.Value && same(a.Lower, b.Lower) && same(a.Upper, b.Upper)
}

// WantCode fails tb unless err carries code.
func WantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := forecast.ErrorCode(err); got != code {
		tb.Fatalf("error code=%q, want %q (err: %v)", got, code, err)
	}
}

func wantRows(tb testing.TB, got, want []store.ForecastRow) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if !SameRow(got[i], want[i]) {
			tb.Fatalf("row %d = %+v, want %+v", i, got[i], want[i])
		}
		if got[i].IssuedAt.Location() != time.UTC || got[i].TargetTime.Location() != time.UTC {
			tb.Fatalf("row %d times are not UTC: %v %v", i, got[i].IssuedAt, got[i].TargetTime)
		}
	}
}

var errStop = errors.New("stop")
