//go:build interop

package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// recordedEM serves the recorded Electricity Maps /history answer for DE
// (24 hours, 2024-03-05T20:00Z to 2024-03-06T19:00Z) to the right token.
func recordedEM(t *testing.T, token string) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile("../../gateway/ingest/electricitymaps/testdata/history_DE.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("auth-token") != token:
			http.Error(w, `{"message":"Invalid auth-token"}`, http.StatusUnauthorized)
		case r.URL.Path != "/v3/carbon-intensity/history" || r.URL.Query().Get("zone") != "DE":
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Production mode end to end: the live poller writes what Electricity Maps
// answers into PostgreSQL; a gateway restarted on the same store (no
// poller) forecasts from it.
func TestIngestIntoStoreThenServe(t *testing.T) {
	pgURL := services.StartPrivatePostgres(t).Database(t) // private: stopped at cleanup, so the leak check sees no server goroutine
	em := recordedEM(t, "test-token")
	now := time.Date(2024, 3, 6, 20, 0, 0, 0, time.UTC)
	common := []string{"--addr", "127.0.0.1:0", "--drain-delay", "0s", "--store", pgURL, "--replay-start", now.Format(time.RFC3339)}

	m := NewMain()
	logs := &testsupport.SyncBuffer{}
	m.Stderr = logs
	if err := m.ParseFlags(append(common, "--store-migrate", "--ingest-zones", "DE",
		"--electricitymaps-url", em.URL, "--electricitymaps-token", "test-token")); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := connect.Open(context.Background(), pgURL)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		latest, ok, err := db.LatestObserved(context.Background(), "DE", forecast.SignalLifecycle)
		if err == nil && ok && latest.Equal(now.Add(-time.Hour)) {
			break
		}
		if time.Now().After(deadline) {
			m.Close()
			t.Fatalf("store not filled after 30s (latest %s %v %v); logs:\n%s", latest, ok, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for !m.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	checks := readyChecks(t, m.URL())
	if checks["store"] != "connected" || checks["ingest"] != "ok" {
		t.Errorf("readyz checks %v, want store connected and ingest ok", checks)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "test-token") {
		t.Error("the Electricity Maps token appears in the logs")
	}

	obs, err := db.Observed(context.Background(), "DE", forecast.SignalLifecycle, now.Add(-24*time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	// /history reaches back 23 hours (electricitymaps.HistoryWindow): the
	// first recorded hour is not asked for. Older history is what
	// `carbonctl ingest --store` loads; here one hour of it.
	if !math.IsNaN(obs.Values[0]) || obs.Values[1] != 562 || obs.Values[23] == 0 || math.IsNaN(obs.Values[23]) {
		t.Fatalf("stored %v, want NaN, then the recorded 562, …", obs.Values)
	}
	if err := db.UpsertObserved(context.Background(), "DE", forecast.SignalLifecycle, []store.Observation{{Time: now.Add(-24 * time.Hour), Value: 534}}); err != nil {
		t.Fatal(err)
	}
	obs.Values[0] = 534
	m2 := NewMain()
	m2.Stderr = &testsupport.SyncBuffer{}
	if err := m2.ParseFlags(common); err != nil {
		t.Fatal(err)
	}
	if err := m2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	for !m2.Ready() {
		time.Sleep(10 * time.Millisecond)
	}
	f := getForecast(t, m2.URL()+"/v1/forecast?zone=DE")
	if f.Provenance.Source != string(forecast.SourceBaseline) || !f.Start.Equal(now) {
		t.Fatalf("forecast from %s starting %s, want baseline at %s", f.Provenance.Source, f.Start, now)
	}
	for i := range 24 {
		if f.Values[i] != obs.Values[i] {
			t.Fatalf("hour %d: %v, want %v (the stored value of the day before)", i, f.Values[i], obs.Values[i])
		}
	}
}

func readyChecks(t *testing.T, base string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Checks
}
