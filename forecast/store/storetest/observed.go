package storetest

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// Hour returns T0 + h hours.
func Hour(h int) time.Time { return T0.Add(time.Duration(h) * time.Hour) }

// Obs returns observations at the given hours, value 200 + hour.
func Obs(hours ...int) []store.Observation {
	out := make([]store.Observation, len(hours))
	for i, h := range hours {
		out[i] = store.Observation{Time: Hour(h), Value: 200 + float64(h), Estimated: h%2 == 1}
	}
	return out
}

func upsert(tb testing.TB, db store.Observed, zone forecast.Zone, signal forecast.Signal, obs []store.Observation) {
	tb.Helper()
	if err := db.UpsertObserved(context.Background(), zone, signal, obs); err != nil {
		tb.Fatalf("UpsertObserved: %v", err)
	}
}

// wantSeries compares s with want, NaN meaning a gap.
func wantSeries(tb testing.TB, s forecast.Series, start time.Time, want []float64) {
	tb.Helper()
	if !s.Start.Equal(start) || len(s.Values) != len(want) {
		tb.Fatalf("series starts %v with %d values, want %v with %d", s.Start, len(s.Values), start, len(want))
	}
	for i, v := range s.Values {
		if v != want[i] && !(math.IsNaN(v) && math.IsNaN(want[i])) {
			tb.Fatalf("series[%d] = %v, want %v (series %v)", i, v, want[i], s.Values)
		}
	}
}

func wantLatest(tb testing.TB, db store.Observed, zone forecast.Zone, signal forecast.Signal, want time.Time, wantOK bool) {
	tb.Helper()
	got, ok, err := db.LatestObserved(context.Background(), zone, signal)
	if err != nil {
		tb.Fatalf("LatestObserved: %v", err)
	}
	if ok != wantOK || (ok && (!got.Equal(want) || got.Location() != time.UTC)) {
		tb.Fatalf("LatestObserved = %v, %v; want %v, %v", got, ok, want, wantOK)
	}
}

func testObservedGaps(t *testing.T, db store.DB) {
	ctx := context.Background()
	upsert(t, db, "DE", forecast.SignalDirect, Obs(0, 1, 2, 5, 6, 7, 8, 9))
	nan := math.NaN()
	s, err := db.Observed(ctx, "DE", forecast.SignalDirect, Hour(0).Add(30*time.Minute), Hour(12))
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, s, Hour(0), []float64{200, 201, 202, nan, nan, 205, 206, 207, 208, 209, nan, nan})
	s, err = db.Observed(ctx, "DE", forecast.SignalLifecycle, Hour(0), Hour(3))
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, s, Hour(0), []float64{nan, nan, nan})
	s, err = db.Observed(ctx, "DE", forecast.SignalDirect, Hour(4), Hour(4))
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, s, Hour(4), []float64{})
	_, err = db.Observed(ctx, "DE", forecast.SignalDirect, Hour(4), Hour(2))
	WantCode(t, err, forecast.EINVALID)
	wantLatest(t, db, "DE", forecast.SignalDirect, Hour(9), true)
	wantLatest(t, db, "DE", forecast.SignalLifecycle, time.Time{}, false)
	wantLatest(t, db, "SE", forecast.SignalDirect, time.Time{}, false)
}

func testObservedReplace(t *testing.T, db store.DB) {
	ctx := context.Background()
	upsert(t, db, "SE", forecast.SignalLifecycle, Obs(0, 1, 2, 3, 4, 5))
	later := Obs(3, 4, 5, 6, 7, 8)
	for i := range later {
		later[i].Value += 1000
	}
	upsert(t, db, "SE", forecast.SignalLifecycle, later)
	upsert(t, db, "SE", forecast.SignalLifecycle, later) // repeating is harmless
	upsert(t, db, "SE", forecast.SignalLifecycle, nil)
	s, err := db.Observed(ctx, "SE", forecast.SignalLifecycle, Hour(0), Hour(9))
	if err != nil {
		t.Fatal(err)
	}
	wantSeries(t, s, Hour(0), []float64{200, 201, 202, 1203, 1204, 1205, 1206, 1207, 1208})
	wantLatest(t, db, "SE", forecast.SignalLifecycle, Hour(8), true)
}

func testBadObservations(t *testing.T, db store.DB) {
	tests := []struct {
		name   string
		zone   forecast.Zone
		signal forecast.Signal
		obs    []store.Observation
		field  string
	}{
		{"no zone", "", forecast.SignalDirect, Obs(0), "zone"},
		{"no signal", "DE", "", Obs(0), "signal"},
		{"off the hour", "DE", forecast.SignalDirect, []store.Observation{{Time: Hour(0).Add(time.Minute), Value: 1}}, "time"},
		{"not increasing", "DE", forecast.SignalDirect, Obs(0, 2, 1), "time"},
		{"repeated hour", "DE", forecast.SignalDirect, Obs(0, 1, 1), "time"},
		{"negative", "DE", forecast.SignalDirect, []store.Observation{{Time: Hour(0), Value: 1}, {Time: Hour(1), Value: -1}}, "value"},
		{"NaN", "DE", forecast.SignalDirect, []store.Observation{{Time: Hour(0), Value: math.NaN()}}, "value"},
		{"infinite", "DE", forecast.SignalDirect, []store.Observation{{Time: Hour(0), Value: math.Inf(1)}}, "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := db.UpsertObserved(context.Background(), tt.zone, tt.signal, tt.obs)
			WantCode(t, err, forecast.EINVALID)
			if f := forecast.ErrorField(err); f != tt.field {
				t.Fatalf("error field=%q, want %q", f, tt.field)
			}
			wantLatest(t, db, "DE", forecast.SignalDirect, time.Time{}, false)
		})
	}
}

func testLastErrors(t *testing.T, db store.DB) {
	ctx := context.Background()
	upsert(t, db, "DE", forecast.SignalLifecycle, Obs(0, 1, 2, 3, 5, 6, 7))
	tests := []struct {
		name   string
		zone   forecast.Zone
		signal forecast.Signal
		end    time.Time
		n      int
		want   []float64
		code   string
		hour   time.Time // named in the EUNAVAILABLE message
	}{
		{name: "complete window", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(4), n: 4, want: []float64{200, 201, 202, 203}},
		{name: "end floored to the hour", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(8).Add(59 * time.Minute), n: 3, want: []float64{205, 206, 207}},
		{name: "no hours", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(8), n: 0, want: []float64{}},
		{name: "gap inside", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(7), n: 5, code: forecast.EUNAVAILABLE, hour: Hour(4)},
		{name: "window after the data", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(20), n: 2, code: forecast.EUNAVAILABLE, hour: Hour(18)},
		{name: "window before the data", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(0), n: 2, code: forecast.EUNAVAILABLE, hour: Hour(-2)},
		{name: "unknown zone", zone: "SE", signal: forecast.SignalLifecycle, end: Hour(4), n: 2, code: forecast.ENOTFOUND},
		{name: "unknown zone, no hours", zone: "SE", signal: forecast.SignalLifecycle, end: Hour(4), n: 0, code: forecast.ENOTFOUND},
		{name: "other signal", zone: "DE", signal: forecast.SignalDirect, end: Hour(4), n: 2, code: forecast.ENOTFOUND},
		{name: "negative n", zone: "DE", signal: forecast.SignalLifecycle, end: Hour(4), n: -1, code: forecast.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.Last(ctx, tt.zone, tt.signal, tt.end, tt.n)
			if tt.code != "" {
				WantCode(t, err, tt.code)
				if !tt.hour.IsZero() && !strings.Contains(err.Error(), tt.hour.Format(time.RFC3339)) {
					t.Fatalf("error %q does not name the missing hour %s", err, tt.hour.Format(time.RFC3339))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Last = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("Last = %v, want %v", got, tt.want)
				}
			}
		})
	}
}
