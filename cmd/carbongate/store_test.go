package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/test/testsupport"
)

// memDB is an in-memory store.DB.
type memDB struct{ *store.Memory }

func (memDB) Migrate(context.Context) error { return nil }
func (memDB) Close()                        {}

// startWithStore runs carbongate with --store served by db.
func startWithStore(t *testing.T, db store.DB, args ...string) *Main {
	t.Helper()
	m := NewMain()
	m.Stderr = &testsupport.SyncBuffer{}
	if err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0", "--store", "memory://test", "--drain-delay", "0s"}, args...)); err != nil {
		t.Fatal(err)
	}
	m.Store.Open = func(context.Context, string) (store.DB, error) { return db, nil }
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !m.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m
}

type forecastJSON struct {
	Start      time.Time `json:"start"`
	Values     []float64 `json:"values"`
	Provenance struct {
		Model, Source, Reason, Vendor string
	} `json:"provenance"`
}

func getForecast(t *testing.T, url string) forecastJSON {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	var f forecastJSON
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// In production mode the models read history from the store, not from the
// bundled data: values seeded only in the store come back through the
// baseline (yesterday repeated).
func TestHistoryFromStore(t *testing.T) {
	t.Parallel()
	db := store.NewMemory()
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	var obs []store.Observation
	for h := -7 * 24; h < 0; h++ {
		obs = append(obs, store.Observation{Time: start.Add(time.Duration(h) * time.Hour), Value: float64(1000 + (h+7*24)%24)})
	}
	if err := db.UpsertObserved(context.Background(), "DE", forecast.SignalLifecycle, obs); err != nil {
		t.Fatal(err)
	}
	m := startWithStore(t, memDB{db}, "--replay-start", start.Format(time.RFC3339))
	f := getForecast(t, m.URL()+"/v1/forecast?zone=DE")
	if f.Provenance.Source != string(forecast.SourceBaseline) {
		t.Fatalf("source %q, want baseline (no models, history from the store)", f.Provenance.Source)
	}
	if !f.Start.Equal(start) || len(f.Values) < 24 {
		t.Fatalf("forecast starts %s with %d values", f.Start, len(f.Values))
	}
	for i := range 24 {
		if f.Values[i] != float64(1000+i) {
			t.Fatalf("hour %d: %v, want %v (the store's value of the day before)", i, f.Values[i], 1000+i)
		}
	}
	// A zone with no observation in the store falls back to climatology,
	// although the bundled data has it.
	if f := getForecast(t, m.URL()+"/v1/forecast?zone=SE"); f.Provenance.Source != string(forecast.SourceClimatology) {
		t.Fatalf("SE source %q, want climatology", f.Provenance.Source)
	}
	wantMetrics(t, m.URL(), `carbongate_dependency_up{dependency="store"} 1`)
}

func TestStoreFlagErrors(t *testing.T) { // not parallel: it sets the environment
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--ingest-zones", "DE"}, nil, "--store"},
		{[]string{"--store", "localhost/db"}, nil, "--store"},
		{[]string{"--store", "memory://x", "--ingest-zones", "DE"}, map[string]string{"ELECTRICITYMAPS_TOKEN": ""}, "--electricitymaps-token"},
		{[]string{"--store", "memory://x", "--ingest-zones", "D E", "--electricitymaps-token", "t"}, nil, "--ingest-zones"},
		{[]string{"--store", "memory://x", "--ingest-zones", "DE", "--ingest-signals", "green", "--electricitymaps-token", "t"}, nil, "--ingest-signals"},
		{[]string{"--store", "memory://x", "--watttime-regions", "US-CAL-CISO=CAISO_NORTH", "--watttime-user", ""}, map[string]string{"WATTTIME_PASSWORD": ""}, "WattTime credentials"},
		{[]string{"--store", "memory://x", "--watttime-regions", "US-CAL-CISO", "--watttime-user", "u"}, map[string]string{"WATTTIME_PASSWORD": "p"}, "ZONE=REGION"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			m := NewMain()
			m.Stderr = &testsupport.SyncBuffer{}
			if err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0"}, c.args...)); err != nil {
				t.Fatal(err)
			}
			m.Store.Open = func(context.Context, string) (store.DB, error) { return memDB{store.NewMemory()}, nil }
			err := m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatalf("started; want an error naming %s", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %s", err, c.want)
			}
		})
	}
}

// A store that cannot be reached does not stop the gateway: it starts,
// forecasts fall back, and /readyz says so (lazy.Conn never waits on an
// attempt after the first).
func TestStoreUnreachable(t *testing.T) {
	t.Parallel()
	m := NewMain()
	m.Stderr = &testsupport.SyncBuffer{}
	if err := m.ParseFlags([]string{"--addr", "127.0.0.1:0", "--store", "postgres://db.invalid/x", "--drain-delay", "0s"}); err != nil {
		t.Fatal(err)
	}
	m.Store.Open = func(context.Context, string) (store.DB, error) {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "connection refused")
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for !m.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(m.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body.Checks["store"], "unreachable") {
		t.Fatalf("readyz %d %v %v, want 200 with checks.store unreachable", resp.StatusCode, body.Checks, err)
	}
	if f := getForecast(t, m.URL()+"/v1/forecast?zone=DE"); f.Provenance.Source != string(forecast.SourceClimatology) {
		t.Fatalf("source %q, want climatology while the store is unreachable", f.Provenance.Source)
	}
	wantMetrics(t, m.URL(), `carbongate_dependency_up{dependency="store"} 0`)
}
