package ingest_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/electricitymaps"
)

// recordedAPI serves a recorded Electricity Maps answer to every request
// carrying token.
func recordedAPI(t *testing.T, token, fixture string) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("electricitymaps", "testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("auth-token") != token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// poll runs one round of a DE lifecycle poller into sink at now.
func poll(t *testing.T, srv *httptest.Server, token string, sink ingest.Sink, now time.Time) {
	t.Helper()
	c, err := electricitymaps.New(electricitymaps.Config{Token: token, BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ingest.New(ingest.Config{
		Sink:   sink,
		Feeds:  []ingest.Feed{{Source: c, Zone: "DE", Signal: forecast.SignalLifecycle}},
		Rates:  map[string]ingest.Rate{electricitymaps.Name: {PerSecond: 100, Burst: 10}},
		Clock:  ingest.NewManualClock(now),
		Jitter: func() float64 { return 0 },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStoreSinkPoller polls a recorded /history answer into a store through
// StoreSink and into a MemorySink: the store holds the same hours, values
// and estimated flags, serves them as history, and a second poll changes
// nothing.
func TestStoreSinkPoller(t *testing.T) {
	t.Parallel()
	const token = "tok-storesink"
	srv := recordedAPI(t, token, "history_DE.json")
	now := time.Date(2024, 3, 6, 19, 40, 0, 0, time.UTC)
	ref := ingest.NewMemorySink()
	poll(t, srv, token, ref, now)
	want := ref.Points("DE", forecast.SignalLifecycle)
	if len(want) == 0 {
		t.Fatal("the reference sink stored nothing")
	}
	mem := store.NewMemory()
	sink := ingest.StoreSink(mem)
	for range 2 {
		poll(t, srv, token, sink, now)
	}
	ctx := context.Background()
	first, last := want[0].Time, want[len(want)-1].Time
	latest, ok, err := sink.Latest(ctx, "DE", forecast.SignalLifecycle)
	if err != nil || !ok || !latest.Equal(last) {
		t.Fatalf("Latest = %v, %v, %v; want %v", latest, ok, err, last)
	}
	s, err := mem.Observed(ctx, "DE", forecast.SignalLifecycle, first.Add(-time.Hour), last.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Values); got != len(want)+2 || !math.IsNaN(s.Values[0]) || !math.IsNaN(s.Values[got-1]) {
		t.Fatalf("observed %v around %d points", s.Values, len(want))
	}
	for i, p := range want {
		if s.Values[i+1] != p.Value {
			t.Fatalf("store holds %v at %s, want %v", s.Values[i+1], p.Time.Format(time.RFC3339), p.Value)
		}
	}
	hist, err := mem.Last(ctx, "DE", forecast.SignalLifecycle, last.Add(time.Hour), len(want))
	if err != nil || len(hist) != len(want) {
		t.Fatalf("Last = %v, %v; want %d hours", hist, err, len(want))
	}
}

func TestStoreSinkErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC)
	sink := ingest.StoreSink(store.NewMemory())
	tests := []struct {
		name   string
		signal forecast.Signal
		points []ingest.Point
		code   string
	}{
		{name: "marginal signal is stored", signal: ingest.SignalMarginal, points: []ingest.Point{{Time: t0, Value: 400, Estimated: true}}},
		{name: "negative value", signal: forecast.SignalDirect, points: []ingest.Point{{Time: t0, Value: -1}}, code: forecast.EINVALID},
		{name: "off the hour", signal: forecast.SignalDirect, points: []ingest.Point{{Time: t0.Add(5 * time.Minute), Value: 1}}, code: forecast.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sink.Upsert(ctx, "DE", tt.signal, tt.points)
			if got := forecast.ErrorCode(err); got != tt.code {
				t.Fatalf("Upsert error %v, want code %q", err, tt.code)
			}
			_, ok, err := sink.Latest(ctx, "DE", tt.signal)
			if err != nil || ok != (tt.code == "") {
				t.Fatalf("Latest found=%v err=%v after Upsert", ok, err)
			}
		})
	}
}

// A poller's sink backed by the observed-signals store: what it upserts is
// the model history the gateway reads.
func ExampleStoreSink() {
	ctx := context.Background()
	observed := store.NewMemory() // or a PostgreSQL/CrateDB store from forecast/store/connect
	sink := ingest.StoreSink(observed)
	t0 := time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC)
	if err := sink.Upsert(ctx, "DE", forecast.SignalLifecycle, []ingest.Point{{Time: t0, Value: 420}, {Time: t0.Add(time.Hour), Value: 410}}); err != nil {
		fmt.Println(err)
	}
	latest, ok, _ := sink.Latest(ctx, "DE", forecast.SignalLifecycle)
	history, _ := observed.Last(ctx, "DE", forecast.SignalLifecycle, t0.Add(2*time.Hour), 2)
	fmt.Println(latest.Format(time.RFC3339), ok, history)
	// Output: 2024-03-06T01:00:00Z true [420 410]
}
