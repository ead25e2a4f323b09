package evaluate_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

var day0 = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)

// observedAt is the synthetic observed intensity at hour t: a daily sine
// around 100, so every whole day averages exactly 100.
func observedAt(t time.Time) float64 {
	return 100 + 50*math.Sin(2*math.Pi*float64(t.Hour())/24)
}

// fixture is a Memory store with observations of DE (direct) from day0
// over days days.
func fixture(t testing.TB, days int) *store.Memory {
	t.Helper()
	m := store.NewMemory()
	obs := make([]store.Observation, days*24)
	for i := range obs {
		at := day0.Add(time.Duration(i) * time.Hour)
		obs[i] = store.Observation{Time: at, Value: observedAt(at)}
	}
	if err := m.UpsertObserved(context.Background(), "DE", forecast.SignalDirect, obs); err != nil {
		t.Fatal(err)
	}
	return m
}

// issue describes one forecast to write: value = observed × (1 + err(lead)),
// with an interval value × [1−band, 1+band] when band > 0.
type issue struct {
	version string
	at      time.Time
	hours   int
	err     func(lead int) float64
	band    float64
}

func write(t testing.TB, m *store.Memory, model string, is ...issue) {
	t.Helper()
	var rows []store.ForecastRow
	for _, x := range is {
		for h := range x.hours {
			at := x.at.Add(time.Duration(h) * time.Hour)
			v := observedAt(at) * (1 + x.err(h))
			lo, hi := math.NaN(), math.NaN()
			if x.band > 0 {
				lo, hi = v*(1-x.band), v*(1+x.band)
			}
			rows = append(rows, store.ForecastRow{Zone: "DE", Signal: forecast.SignalDirect, ModelName: model,
				ModelVersion: x.version, IssuedAt: x.at, TargetTime: at, Value: v, Lower: lo, Upper: hi})
		}
	}
	if err := m.WriteForecasts(context.Background(), "test", nil, rows); err != nil {
		t.Fatal(err)
	}
}

func constErr(e float64) func(int) float64 { return func(int) float64 { return e } }

// byDay is an error of 5 % × lead day: 5 % on day 1, 10 % on day 2, …
func byDay(lead int) float64 { return 0.05 * float64(lead/24+1) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
