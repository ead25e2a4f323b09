package vendorfc

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/models/evaluate"
)

func TestStorePollerMemory(t *testing.T) {
	t.Parallel()
	testStorePoller(t, store.NewMemory())
}

// testStorePoller stores the recorded Electricity Maps forecast twice (the
// second round replaces the first) beside a carbongate model's forecast
// issued at the same hour, and scores both with models/evaluate against
// observations 10 g/kWh above the vendor's values: the vendor's MAE is 10,
// the model's (30 above the vendor) 20, on the same issue time.
func testStorePoller(t *testing.T, db store.Forecasts) {
	ctx := context.Background()
	rec := recordedEM(t)
	a := newEM(t, replay(t, emData, "forecast_DE.json"))
	clk := ingest.NewManualClock(emStart.Add(-13 * time.Minute))
	f := emForecaster(t, a, clk, &logs{}, Config{MaxAge: time.Minute})
	p, err := NewStorePoller(StoreConfig{Forecaster: f, Store: db, Feeds: []Feed{{"DE", forecast.SignalLifecycle}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Minute)
	}
	if got := a.calls.Load(); got != 2 {
		t.Fatalf("%d vendor calls for two rounds a MaxAge apart, want 2", got)
	}
	var rows []store.ForecastRow
	if err := db.ReadForecasts(ctx, store.ForecastQuery{ModelName: "vendor:electricitymaps"}, func(r store.ForecastRow) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(rec) {
		t.Fatalf("%d rows stored, want %d (one per forecast hour, the second round replacing the first)", len(rows), len(rec))
	}
	for i, r := range rows {
		if !r.IssuedAt.Equal(emStart) || !r.TargetTime.Equal(emStart.Add(time.Duration(i)*time.Hour)) || r.Value != rec[i] ||
			r.Zone != "DE" || r.Signal != forecast.SignalLifecycle || r.ModelVersion != "" || r.HasInterval() {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	if done, err := db.Done(ctx, Job("electricitymaps")); err != nil || len(done) != 1 || !done[0].IssuedAt.Equal(emStart) {
		t.Fatalf("Done = %v, %v; want the one issue", done, err)
	}

	model := make([]store.ForecastRow, len(rec))
	obs := forecast.Series{Start: emStart, Values: make([]float64, len(rec))}
	for i, v := range rec {
		model[i] = store.ForecastRow{Zone: "DE", Signal: forecast.SignalLifecycle, ModelName: "carbon-forecaster-DE", ModelVersion: "3",
			IssuedAt: emStart, TargetTime: emStart.Add(time.Duration(i) * time.Hour), Value: v + 30, Lower: math.NaN(), Upper: math.NaN()}
		obs.Values[i] = v + 10
	}
	if err := db.WriteForecasts(ctx, "backfill", nil, model); err != nil {
		t.Fatal(err)
	}
	set, err := evaluate.Load(ctx, db, evaluate.Selection{Query: store.ForecastQuery{Zones: []forecast.Zone{"DE"}}, LeadDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluate.Score(ctx, set, evaluate.SeriesFunc(func(z forecast.Zone, s forecast.Signal) (forecast.Series, bool) {
		return obs, z == "DE" && s == forecast.SignalLifecycle
	}))
	if err != nil {
		t.Fatal(err)
	}
	mae := map[string]float64{}
	for _, r := range rep.Results {
		if r.Scored != 1 || !r.First.Equal(emStart) {
			t.Fatalf("%s: %d scored, first %s; want 1 at %s", r.ModelName, r.Scored, r.First, emStart)
		}
		mae[r.ModelName] = r.Days[0].MAE.Mean
	}
	if len(mae) != 2 || math.Abs(mae["vendor:electricitymaps"]-10) > 1e-9 || math.Abs(mae["carbon-forecaster-DE"]-20) > 1e-9 {
		t.Fatalf("MAE by model %v; want vendor:electricitymaps 10, carbon-forecaster-DE 20", mae)
	}
}

func TestStorePollerValidates(t *testing.T) {
	t.Parallel()
	a := newEM(t, replay(t, emData, "forecast_DE.json"))
	f := emForecaster(t, a, ingest.NewManualClock(emStart), &logs{}, Config{})
	for _, cfg := range []StoreConfig{
		{Forecaster: f, Store: store.NewMemory()},
		{Forecaster: f, Store: store.NewMemory(), Feeds: []Feed{{"DE", forecast.SignalMarginal}}},
		{Store: store.NewMemory(), Feeds: []Feed{{"DE", forecast.SignalLifecycle}}},
	} {
		_, err := NewStorePoller(cfg)
		wantCode(t, err, forecast.EINVALID)
	}
}
