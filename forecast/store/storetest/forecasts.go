package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// expectedOrder is the documented order of ReadForecasts, with signal last.
func expectedOrder(a, b store.ForecastRow) int {
	return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.ModelName, b.ModelName),
		cmp.Compare(a.ModelVersion, b.ModelVersion), a.IssuedAt.Compare(b.IssuedAt),
		a.TargetTime.Compare(b.TargetTime), cmp.Compare(a.Signal, b.Signal))
}

// grid returns rows of every zone × model × version × signal × issued hour
// (one every 24 h) × lead, shuffled by seed.
func grid(zones []forecast.Zone, models, versions []string, signals []forecast.Signal, issues, leads int, seed uint64) []store.ForecastRow {
	var rows []store.ForecastRow
	for _, z := range zones {
		for _, m := range models {
			for _, v := range versions {
				for si, s := range signals {
					for i := range issues {
						for l := range leads {
							r := Row(z, m, v, 24*i, l, (i+l)%3 == 0)
							r.Signal = s
							r.Value += float64(si) / 1000
							rows = append(rows, r)
						}
					}
				}
			}
		}
	}
	rand.New(rand.NewPCG(seed, seed)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	return rows
}

func testRewrite(t *testing.T, db store.DB) {
	rows := grid([]forecast.Zone{"DE"}, []string{"m"}, []string{"1"}, []forecast.Signal{forecast.SignalLifecycle}, 2, 24, 1)
	Write(t, db, "job", nil, rows)
	Write(t, db, "job", nil, rows)
	changed := slices.Clone(rows)
	for i := range changed {
		changed[i].Value += 1
		if i%2 == 0 {
			changed[i].Lower, changed[i].Upper = math.NaN(), math.NaN()
		} else {
			changed[i].Lower, changed[i].Upper = changed[i].Value-1, changed[i].Value+1
		}
	}
	Write(t, db, "job", nil, changed)
	want := slices.Clone(changed)
	slices.SortFunc(want, expectedOrder)
	wantRows(t, ReadAll(t, db, store.ForecastQuery{}), want)
}

func testDuplicateKeys(t *testing.T, db store.DB) {
	first := Row("DE", "m", "1", 0, 1, false)
	second := first
	second.Value, second.Lower, second.Upper = 7, math.NaN(), math.NaN()
	other := Row("DE", "m", "1", 0, 0, false)
	Write(t, db, "job", nil, []store.ForecastRow{first, other, second})
	wantRows(t, ReadAll(t, db, store.ForecastQuery{}), []store.ForecastRow{other, second})
}

func testIntervalNaN(t *testing.T, db store.DB) {
	with := Row("SE", "m", "1", 0, 0, false)
	without := Row("SE", "m", "1", 0, 1, true)
	Write(t, db, "job", nil, []store.ForecastRow{with, without})
	got := ReadAll(t, db, store.ForecastQuery{})
	wantRows(t, got, []store.ForecastRow{with, without})
	if !got[0].HasInterval() || got[1].HasInterval() || !math.IsNaN(got[1].Lower) || !math.IsNaN(got[1].Upper) {
		t.Fatalf("intervals read back as %+v", got)
	}
}

func testReadOrder(t *testing.T, db store.DB) {
	// Versions compare as strings ("10" before "2"), zones bytewise.
	rows := grid([]forecast.Zone{"US-CAL-CISO", "DE", "SE"}, []string{"m-b", "m-a"}, []string{"2", "10", "1"},
		[]forecast.Signal{forecast.SignalLifecycle, forecast.SignalDirect}, 3, 4, 2)
	// Non-UTC times are stored as the same instants.
	berlin := time.FixedZone("CET", 3600)
	for i := range rows {
		if i%2 == 0 {
			rows[i].IssuedAt, rows[i].TargetTime = rows[i].IssuedAt.In(berlin), rows[i].TargetTime.In(berlin)
		}
	}
	Write(t, db, "job", nil, rows[:len(rows)/2])
	Write(t, db, "job", nil, rows[len(rows)/2:])
	want := slices.Clone(rows)
	slices.SortFunc(want, expectedOrder)
	wantRows(t, ReadAll(t, db, store.ForecastQuery{}), want)
}

func testQueryFilters(t *testing.T, db store.DB) {
	rows := grid([]forecast.Zone{"DE", "SE", "FR"}, []string{"a", "b"}, []string{"1", "2"},
		[]forecast.Signal{forecast.SignalLifecycle, forecast.SignalDirect}, 3, 2, 3)
	Write(t, db, "job", nil, rows)
	day := func(d int) time.Time { return T0.Add(time.Duration(24*d) * time.Hour) }
	tests := []struct {
		name string
		q    store.ForecastQuery
		keep func(r store.ForecastRow) bool
	}{
		{"everything", store.ForecastQuery{}, func(store.ForecastRow) bool { return true }},
		{"one zone", store.ForecastQuery{Zones: []forecast.Zone{"SE"}}, func(r store.ForecastRow) bool { return r.Zone == "SE" }},
		{"two zones", store.ForecastQuery{Zones: []forecast.Zone{"FR", "DE"}}, func(r store.ForecastRow) bool { return r.Zone != "SE" }},
		{"unknown zone", store.ForecastQuery{Zones: []forecast.Zone{"XX"}}, func(store.ForecastRow) bool { return false }},
		{"signal", store.ForecastQuery{Signal: forecast.SignalDirect}, func(r store.ForecastRow) bool { return r.Signal == forecast.SignalDirect }},
		{"model", store.ForecastQuery{ModelName: "b"}, func(r store.ForecastRow) bool { return r.ModelName == "b" }},
		{"model version", store.ForecastQuery{ModelName: "a", ModelVersion: "2"}, func(r store.ForecastRow) bool { return r.ModelName == "a" && r.ModelVersion == "2" }},
		{"issued from (inclusive)", store.ForecastQuery{IssuedFrom: day(1)}, func(r store.ForecastRow) bool { return !r.IssuedAt.Before(day(1)) }},
		{"issued to (exclusive)", store.ForecastQuery{IssuedTo: day(1)}, func(r store.ForecastRow) bool { return r.IssuedAt.Before(day(1)) }},
		{"issued range, zone and signal", store.ForecastQuery{Zones: []forecast.Zone{"DE"}, Signal: forecast.SignalLifecycle, IssuedFrom: day(1), IssuedTo: day(2)},
			func(r store.ForecastRow) bool {
				return r.Zone == "DE" && r.Signal == forecast.SignalLifecycle && r.IssuedAt.Equal(day(1))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []store.ForecastRow
			for _, r := range rows {
				if tt.keep(r) {
					want = append(want, r)
				}
			}
			slices.SortFunc(want, expectedOrder)
			wantRows(t, ReadAll(t, db, tt.q), want)
		})
	}
}

func testReadStops(t *testing.T, db store.DB) {
	rows := grid([]forecast.Zone{"DE"}, []string{"m"}, []string{"1"}, []forecast.Signal{forecast.SignalLifecycle}, 1, 10, 4)
	Write(t, db, "job", nil, rows)
	n := 0
	err := db.ReadForecasts(context.Background(), store.ForecastQuery{}, func(store.ForecastRow) error {
		n++
		if n == 2 {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) || n != 2 {
		t.Fatalf("ReadForecasts = %v after %d rows, want the callback's error after 2", err, n)
	}
	// The store still works after an interrupted read.
	if got := len(ReadAll(t, db, store.ForecastQuery{})); got != len(rows) {
		t.Fatalf("read %d rows, want %d", got, len(rows))
	}
}

func testCheckpoints(t *testing.T, db store.DB) {
	ctx := context.Background()
	cet := time.FixedZone("CET", 3600)
	u := func(z forecast.Zone, h int) store.Unit {
		return store.Unit{Zone: z, IssuedAt: T0.Add(time.Duration(h) * time.Hour)}
	}
	Write(t, db, "a", []store.Unit{u("SE", 24), u("DE", 24), {Zone: "DE", IssuedAt: T0.In(cet)}}, []store.ForecastRow{Row("DE", "m", "1", 0, 0, false)})
	Write(t, db, "a", []store.Unit{u("DE", 0), u("DE", 48)}, nil) // a repeated unit, checkpoints only
	Write(t, db, "b", []store.Unit{u("FR", 0)}, nil)
	tests := []struct {
		job  string
		want []store.Unit
	}{
		{"a", []store.Unit{u("DE", 0), u("DE", 24), u("DE", 48), u("SE", 24)}},
		{"b", []store.Unit{u("FR", 0)}},
		{"never-run", nil},
	}
	for _, tt := range tests {
		got, err := db.Done(ctx, tt.job)
		if err != nil {
			t.Fatalf("Done(%s): %v", tt.job, err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("Done(%s) = %v, want %v", tt.job, got, tt.want)
		}
		for i := range got {
			if got[i].Zone != tt.want[i].Zone || !got[i].IssuedAt.Equal(tt.want[i].IssuedAt) || got[i].IssuedAt.Location() != time.UTC {
				t.Fatalf("Done(%s) = %v, want %v (UTC)", tt.job, got, tt.want)
			}
		}
	}
}

func testBadRow(t *testing.T, db store.DB) {
	good := Row("DE", "m", "1", 0, 0, false)
	tests := []struct {
		name  string
		bad   func(r *store.ForecastRow)
		field string
	}{
		{"NaN value", func(r *store.ForecastRow) { r.Value = math.NaN() }, "value"},
		{"infinite value", func(r *store.ForecastRow) { r.Value = math.Inf(1) }, "value"},
		{"target before issue", func(r *store.ForecastRow) { r.TargetTime = r.IssuedAt.Add(-time.Hour) }, "target_time"},
		{"issue off the hour", func(r *store.ForecastRow) { r.IssuedAt = r.IssuedAt.Add(time.Minute) }, "issued_at"},
		{"one bound", func(r *store.ForecastRow) { r.Upper = math.NaN() }, "lower"},
		{"bounds reversed", func(r *store.ForecastRow) { r.Lower, r.Upper = r.Upper, r.Lower }, "lower"},
		{"no model", func(r *store.ForecastRow) { r.ModelName = "" }, "model_name"},
		{"no zone", func(r *store.ForecastRow) { r.Zone = "" }, "zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := Row("DE", "m", "1", 0, 5, false)
			tt.bad(&bad)
			err := db.WriteForecasts(context.Background(), "job-"+tt.name, []store.Unit{{Zone: "DE", IssuedAt: T0}}, []store.ForecastRow{good, bad})
			WantCode(t, err, forecast.EINVALID)
			if f := forecast.ErrorField(err); f != tt.field {
				t.Fatalf("error field=%q, want %q", f, tt.field)
			}
			if n := len(ReadAll(t, db, store.ForecastQuery{})); n != 0 {
				t.Fatalf("%d rows stored after a rejected call", n)
			}
			done, err := db.Done(context.Background(), "job-"+tt.name)
			if err != nil || len(done) != 0 {
				t.Fatalf("Done = %v, %v after a rejected call", done, err)
			}
		})
	}
}

func testConcurrentWriters(t *testing.T, db store.DB) {
	const writers, rounds = 6, 3
	shared := grid([]forecast.Zone{"SHARED"}, []string{"m"}, []string{"1"}, []forecast.Signal{forecast.SignalLifecycle}, 4, 24, 5)
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			zone := forecast.Zone(fmt.Sprintf("Z%d", w))
			own := grid([]forecast.Zone{zone}, []string{"m"}, []string{"1"}, []forecast.Signal{forecast.SignalLifecycle}, 2, 24, uint64(w))
			for r := range rounds {
				rows := append(slices.Clone(shared), own...)
				if (w+r)%2 == 1 {
					slices.Reverse(rows)
				}
				errs <- db.WriteForecasts(context.Background(), "job", []store.Unit{{Zone: zone, IssuedAt: T0}}, rows)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent WriteForecasts: %v", err)
		}
	}
	if got, want := len(ReadAll(t, db, store.ForecastQuery{})), len(shared)+writers*2*24; got != want {
		t.Fatalf("%d rows after concurrent writes, want %d", got, want)
	}
	done, err := db.Done(context.Background(), "job")
	if err != nil || len(done) != writers {
		t.Fatalf("Done = %v, %v; want %d units", done, err, writers)
	}
}

func testMigrate(t *testing.T, db store.DB) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- db.Migrate(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	r := Row("DE", "m", "1", 0, 0, false)
	Write(t, db, "job", nil, []store.ForecastRow{r})
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	wantRows(t, ReadAll(t, db, store.ForecastQuery{}), []store.ForecastRow{r})
}
