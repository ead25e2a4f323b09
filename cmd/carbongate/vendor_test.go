package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
	"github.com/carbongate/carbongate/test/testsupport"
)

// emStart is the first hour of the recorded Electricity Maps forecast;
// the replay clock starts when it was made.
var emStart = time.Date(2024, 3, 6, 20, 0, 0, 0, time.UTC)

// fakeEM serves the recorded forecast of DE to the token, or status with
// Retry-After when status is not 200.
func fakeEM(t *testing.T, token string, status int) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("..", "..", "gateway", "ingest", "electricitymaps", "testdata", "forecast_DE.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("auth-token") != token:
			http.Error(w, `{"error":"Invalid auth-token"}`, http.StatusUnauthorized)
		case r.URL.Query().Get("zone") != "DE":
			http.Error(w, `{"error":"unknown zone"}`, http.StatusNotFound)
		case status != http.StatusOK:
			w.Header().Set("Retry-After", "60")
			http.Error(w, `{"message":"rate limit exceeded"}`, status)
		default:
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// --vendor-forecast=electricitymaps with the token from the environment:
// DE is answered by the vendor (source vendor, the vendor named), the
// vendor's forecast is stored in --store under vendor:electricitymaps, and
// the token is not logged. A vendor answering 429 falls through to
// climatology with the reason.
func TestVendorForecast(t *testing.T) { // not parallel: it sets the environment
	token := "em-token-" + strings.Repeat("x", 8)
	t.Setenv("ELECTRICITYMAPS_TOKEN", token)
	flags := func(url string) []string {
		return []string{"--replay-start", emStart.Add(-13 * time.Minute).Format(time.RFC3339),
			"--vendor-forecast", "electricitymaps", "--electricitymaps-url", url, "--vendor-rate", "1000", "--vendor-burst", "1000"}
	}

	db := store.NewMemory()
	m := startWithStore(t, memDB{db}, append(flags(fakeEM(t, token, http.StatusOK).URL), "--vendor-store-zones", "DE")...)
	f := getForecast(t, m.URL()+"/v1/forecast?zone=DE")
	p := f.Provenance
	if p.Source != "vendor" || p.Vendor != "electricitymaps" || p.Model != "vendor:electricitymaps" {
		t.Fatalf("provenance %+v, want the vendor (no model, no history in 2024: the baseline cannot answer first)", p)
	}
	var rows int
	deadline := time.Now().Add(10 * time.Second)
	for rows == 0 && time.Now().Before(deadline) {
		rows = 0
		err := db.ReadForecasts(context.Background(), store.ForecastQuery{ModelName: "vendor:electricitymaps"}, func(r store.ForecastRow) error {
			if !r.IssuedAt.Equal(emStart) || r.Zone != "DE" {
				t.Errorf("row %+v", r)
			}
			rows++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rows == 0 || len(f.Values) < 2 || f.Values[1] == 0 {
		t.Fatalf("%d vendor rows stored; forecast %v", rows, f.Values)
	}
	if log := m.Stderr.(*testsupport.SyncBuffer).String(); strings.Contains(log, token) {
		t.Fatal("the token is in the log")
	}
	wantMetrics(t, m.URL(), `carbongate_vendor_requests_total{code="ok",vendor="electricitymaps"} 2`) // DE lifecycle and direct, once each

	m = startWithStore(t, memDB{store.NewMemory()}, flags(fakeEM(t, token, http.StatusTooManyRequests).URL)...)
	p = getForecast(t, m.URL()+"/v1/forecast?zone=DE").Provenance
	if p.Source != string(forecast.SourceClimatology) || !strings.Contains(p.Reason, "vendor electricitymaps: unavailable: electricitymaps answered 429") {
		t.Fatalf("provenance %+v, want climatology after the vendor's 429", p)
	}
}

func TestVendorFlagErrors(t *testing.T) { // not parallel: it sets the environment
	t.Setenv("ELECTRICITYMAPS_TOKEN", "")
	t.Setenv("WATTTIME_PASSWORD", "p")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vendor-forecast", "tomorrow.io"}, "--vendor-forecast"},
		{[]string{"--vendor-forecast", "electricitymaps", "--vendor-position", "second"}, "--vendor-position"},
		{[]string{"--vendor-store-zones", "DE"}, "--vendor-forecast"},
		{[]string{"--vendor-forecast", "electricitymaps"}, "ELECTRICITYMAPS_TOKEN"},
		{[]string{"--vendor-forecast", "electricitymaps", "--electricitymaps-token", "t", "--vendor-store-zones", "DE"}, "--store"},
		{[]string{"--vendor-forecast", "electricitymaps", "--electricitymaps-token", "t", "--vendor-horizon", "3"}, "--vendor-horizon"},
		{[]string{"--vendor-forecast", "watttime", "--watttime-user", "u"}, "--watttime-regions"},
		{[]string{"--vendor-forecast", "watttime", "--watttime-user", "u", "--watttime-regions", "US-CAL-CISO=CAISO_NORTH",
			"--store", "memory://x", "--vendor-store-zones", "DE"}, "does not forecast zone DE"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			m := NewMain()
			m.Stderr = &testsupport.SyncBuffer{}
			err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0"}, c.args...))
			if err == nil {
				m.Store.Open = func(context.Context, string) (store.DB, error) { return memDB{store.NewMemory()}, nil }
				if err = m.Run(context.Background()); err == nil {
					m.Close()
					t.Fatalf("started; want an error naming %s", c.want)
				}
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %s", err, c.want)
			}
		})
	}
}

// --vendor-forecast=watttime serves the marginal signal of its zones
// (source vendor, in g/kWh) and lists it in /v1/zones; a gateway without it
// answers signal=marginal with 400 naming signal. The password is not
// logged.
func TestVendorMarginalSignal(t *testing.T) { // not parallel: it sets the environment
	password := "wt-password-" + strings.Repeat("y", 8)
	t.Setenv("WATTTIME_PASSWORD", password)
	body, err := os.ReadFile(filepath.Join("..", "..", "gateway", "vendorfc", "testdata", "watttime_forecast_CAISO_NORTH_24h.json"))
	if err != nil {
		t.Fatal(err)
	}
	wt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			if u, p, ok := r.BasicAuth(); !ok || u != "carbongate" || p != password {
				http.Error(w, `{"error":"invalid credentials"}`, http.StatusUnauthorized)
				return
			}
			w.Write([]byte(`{"token":"wt-session"}`))
			return
		}
		if r.Header.Get("Authorization") != "Bearer wt-session" || r.URL.Path != "/v3/forecast" || r.URL.Query().Get("region") != "CAISO_NORTH" {
			http.Error(w, `{"error":"invalid request"}`, http.StatusBadRequest)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(wt.Close)
	const replay = "2024-01-15T12:35:00Z" // WattTime's first whole hour is 13:00
	m := startWithStore(t, memDB{store.NewMemory()}, "--replay-start", replay, "--vendor-forecast", "watttime", "--vendor-position", "last",
		"--watttime-user", "carbongate", "--watttime-regions", "US-CAL-CISO=CAISO_NORTH", "--watttime-url", wt.URL)
	f := getForecast(t, m.URL()+"/v1/forecast?zone=US-CAL-CISO&signal=marginal")
	if p := f.Provenance; p.Source != "vendor" || p.Vendor != "watttime" || p.Model != "vendor:watttime" {
		t.Fatalf("provenance %+v", p)
	}
	// The first hour (12:00, before WattTime's first whole hour) takes the
	// value of 13:00: the mean of its twelve 5-minute points, lbs/MWh → g/kWh.
	var rec struct {
		Data []struct {
			Value float64 `json:"value"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, p := range rec.Data[6:18] { // 13:00 to 13:55
		sum += p.Value
	}
	if want := sum / 12 * watttime.LbsPerMWh; len(f.Values) < 2 || math.Abs(f.Values[0]-want) > 1e-9 || f.Values[1] != f.Values[0] {
		t.Fatalf("values %v…, want %v g/kWh at 12:00 and 13:00", f.Values[:min(2, len(f.Values))], want)
	}
	zones := getBody(t, m.URL()+"/v1/zones")
	if !strings.Contains(zones, `"marginal":"vendor"`) {
		t.Fatalf("/v1/zones lists no marginal forecaster:\n%s", zones)
	}
	if log := m.Stderr.(*testsupport.SyncBuffer).String(); strings.Contains(log, password) {
		t.Fatal("the password is in the log")
	}

	m = startWithStore(t, memDB{store.NewMemory()}, "--replay-start", replay)
	resp, err := http.Get(m.URL() + "/v1/forecast?zone=US-CAL-CISO&signal=marginal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Field string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusBadRequest || e.Error.Field != "signal" {
		t.Fatalf("without WattTime: %d %+v (%v), want 400 naming signal", resp.StatusCode, e, err)
	}
}
