package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/casdk"
	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// TestCASDKServed: the Carbon Aware SDK's API is served under /casdk by
// default, behind the server's middleware (request ids), described in
// /openapi.json; --casdk-root adds the root and --casdk-prefix "" drops the
// prefix.
func TestCASDKServed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		args   []string
		served map[string]int // path → status
	}{
		{"default", nil, map[string]int{"/casdk/locations": 200, "/locations": 404}},
		{"root too", []string{"--casdk-root"}, map[string]int{"/casdk/locations": 200, "/locations": 200}},
		{"root only", []string{"--casdk-root", "--casdk-prefix", ""}, map[string]int{"/casdk/locations": 404, "/locations": 200}},
		{"off", []string{"--casdk-prefix", ""}, map[string]int{"/casdk/locations": 404, "/locations": 404}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := startMain(t, append([]string{"--drain-delay", "0s"}, tt.args...)...)
			for path, want := range tt.served {
				resp, err := http.Get(m.URL() + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
				}
				if want == 200 && resp.Header.Get(httpedge.HeaderRequestID) == "" {
					t.Errorf("GET %s: no request id", path)
				}
			}
			resp, err := http.Get(m.URL() + "/openapi.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct{ Paths map[string]any }
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			for path, want := range tt.served {
				if _, ok := doc.Paths[path]; ok != (want == 200) {
					t.Errorf("%s documented=%v, served %d", path, ok, want)
				}
			}
		})
	}
}

func TestCASDKCurrentForecastFromTheGateway(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, "--drain-delay", "0s")
	resp, err := http.Get(m.URL() + "/casdk/emissions/forecasts/current?location=westeurope&windowSize=180")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var fcs []struct {
		Location     string
		WindowSize   int
		ForecastData []struct{ Value float64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&fcs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	// A forecast of the horizon's hours holds that many less two windows
	// of three hours.
	if want := int(gateway.DefaultHorizon/time.Hour) - 2; len(fcs) != 1 || fcs[0].Location != "westeurope" || fcs[0].WindowSize != 180 || len(fcs[0].ForecastData) != want {
		t.Fatalf("forecasts %+v", fcs)
	}
	if p := resp.Header.Get(casdk.HeaderProvenance); !strings.Contains(p, `zone="NL"`) || !strings.Contains(p, "source=") {
		t.Errorf("provenance %q", p)
	}
}

func TestCASDKLocationsHaveCoordinates(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, "--drain-delay", "0s")
	resp, err := http.Get(m.URL() + "/casdk/locations")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var locs map[string]struct {
		Latitude, Longitude *float64
		Name                string
	}
	if err := json.NewDecoder(resp.Body).Decode(&locs); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	// westeurope's coordinates in the region table (the Carbon Aware SDK's
	// own); a zone id has none.
	if l := locs["westeurope"]; l.Latitude == nil || *l.Latitude != 52.3667 || *l.Longitude != 4.9 {
		t.Errorf("westeurope %+v", l)
	}
	if l, ok := locs["NL"]; !ok || l.Latitude != nil {
		t.Errorf("zone NL %+v (listed %v), want no coordinates", l, ok)
	}
}

func TestCASDKBadPrefix(t *testing.T) {
	t.Parallel()
	m := NewMain()
	if err := m.ParseFlags([]string{"--casdk-prefix", "casdk/"}); err == nil || !strings.Contains(err.Error(), "--casdk-prefix") {
		t.Fatalf("err=%v, want --casdk-prefix named", err)
	}
}

// With --store, the SDK's batch forecasts come from the forecast store
// and its observed values from the observed-signals store, which the
// provenance header says.
func TestCASDKFromStore(t *testing.T) {
	t.Parallel()
	db := store.NewMemory()
	ctx := context.Background()
	issued := time.Date(2021, 5, 30, 0, 0, 0, 0, time.UTC)
	var rows []store.ForecastRow
	for i := range 48 {
		rows = append(rows, store.ForecastRow{Zone: "DE", Signal: forecast.SignalLifecycle, ModelName: "carbon-forecaster-DE", ModelVersion: "4",
			IssuedAt: issued, TargetTime: issued.Add(time.Duration(i) * time.Hour), Value: float64(300 + i), Lower: math.NaN(), Upper: math.NaN()})
	}
	if err := db.WriteForecasts(ctx, "backfill", nil, rows); err != nil {
		t.Fatal(err)
	}
	obs := []store.Observation{{Time: issued, Value: 123}, {Time: issued.Add(time.Hour), Value: 125}}
	if err := db.UpsertObserved(ctx, "DE", forecast.SignalLifecycle, obs); err != nil {
		t.Fatal(err)
	}
	m := startWithStore(t, memDB{db})

	resp, err := http.Post(m.URL()+"/casdk/emissions/forecasts/batch", "application/json",
		strings.NewReader(`[{"location":"aws:eu-central-1","requestedAt":"2021-05-30T10:00:00Z","windowSize":120}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var fcs []struct {
		GeneratedAt  string
		ForecastData []struct{ Value float64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&fcs); err != nil || resp.StatusCode != http.StatusOK || len(fcs) != 1 {
		t.Fatalf("batch: status %d, %v, %+v", resp.StatusCode, err, fcs)
	}
	// Two-hour windows over the 48 stored hours: 47, the first the mean of 300 and 301.
	if f := fcs[0]; f.GeneratedAt != "2021-05-30T00:00:00Z" || len(f.ForecastData) != 47 || f.ForecastData[0].Value != 300.5 {
		t.Errorf("batch forecast %+v", f)
	}
	if p := resp.Header.Get(casdk.HeaderProvenance); !strings.Contains(p, `source="forecast-store"; model="carbon-forecaster-DE"; version="4"`) {
		t.Errorf("batch provenance %q", p)
	}

	resp, err = http.Get(m.URL() + "/casdk/emissions/average-carbon-intensity?location=DE&startTime=2021-05-30T00:00:00Z&endTime=2021-05-30T02:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var avg struct{ CarbonIntensity float64 }
	if err := json.NewDecoder(resp.Body).Decode(&avg); err != nil || resp.StatusCode != http.StatusOK || avg.CarbonIntensity != 124 {
		t.Fatalf("average: status %d, %v, %+v; want 124 from the store", resp.StatusCode, err, avg)
	}
	if p := resp.Header.Get(casdk.HeaderProvenance); !strings.Contains(p, `source="store"`) {
		t.Errorf("average provenance %q", p)
	}
}

// TestCASDKAzureRegionsOfTheSDK: every Azure region name the Carbon Aware
// SDK ships (its azure-regions.json) either is served or answers a 400
// saying why it is not (a known region without zone data), distinct from
// a misspelt name, which answers the nearest names.
func TestCASDKAzureRegionsOfTheSDK(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "forecast", "regions", "gen", "sources", "casdk-azure-regions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sdk map[string]any
	if err := json.Unmarshal(raw, &sdk); err != nil {
		t.Fatal(err)
	}
	m, _ := startMain(t, "--drain-delay", "0s")
	get := func(loc string) (int, string) {
		resp, err := http.Get(m.URL() + "/casdk/emissions/forecasts/current?location=" + url.QueryEscape(loc))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	served := 0
	for name := range sdk {
		switch code, body := get(name); {
		case code == http.StatusOK:
			served++
		case code == http.StatusBadRequest && strings.Contains(body, "is not served") && !strings.Contains(body, "unknown location"):
		default:
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
	t.Logf("%d of the SDK's %d Azure region names served", served, len(sdk))
	if served < 53 {
		t.Errorf("%d of the SDK's %d Azure regions served, want at least 53", served, len(sdk))
	}
	for loc, want := range map[string]string{
		"uksuoth":        "did you mean uksouth",
		"westus3":        "maps to zone US-SW-AZPS, which has no data and no climatology",
		"azure:brazilus": "known but has no grid zone",
	} {
		if code, body := get(loc); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 400 with %q", loc, code, body, want)
		}
	}
	if code, body := get("uksouth"); code != http.StatusOK {
		t.Errorf("uksouth: %d %s", code, body)
	}
}

// TestCASDKServerErrors: errors the server raises for the SDK's routes
// (413, 431, 404, 405) are the SDK's error document.
func TestCASDKServerErrors(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, "--drain-delay", "0s")
	for _, tt := range []struct {
		name, method, path string
		body               string
		header             string
		status             int
	}{
		{"body too large", http.MethodPost, "/casdk/emissions/average-carbon-intensity/batch", strings.Repeat(" ", httpapi.MaxBodyBytes+1), "", 413},
		{"headers too large", http.MethodGet, "/casdk/locations", "", strings.Repeat("x", httpapi.MaxHeaderBytes), 431},
		{"no route", http.MethodGet, "/casdk/nowhere", "", "", 404},
		{"wrong method", http.MethodPut, "/casdk/locations", "", "", 405},
	} {
		req, err := http.NewRequest(tt.method, m.URL()+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tt.header != "" {
			req.Header.Set("X-Big", tt.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var p struct {
			Title   string
			Status  int
			TraceID string
		}
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tt.status || p.Status != tt.status || p.Title == "" || p.TraceID == "" {
			t.Errorf("%s: %d %+v (%v), want %d in the SDK's error document with a traceId", tt.name, resp.StatusCode, p, err, tt.status)
		}
	}
}
