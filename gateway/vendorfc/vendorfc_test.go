package vendorfc

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
)

// The recorded Electricity Maps forecast starts at the hour after the one
// it was made in: a request for that hour gets the first value for it,
// then the vendor's hours, then its last day again.
func TestElectricityMapsRecorded(t *testing.T) {
	t.Parallel()
	rec := recordedEM(t)
	n := len(rec)
	for _, tc := range []struct {
		name    string
		start   time.Time
		horizon int
		want    func(i int) float64
	}{
		{"the current hour", emStart.Add(-time.Hour), 96, func(i int) float64 {
			if i == 0 {
				return rec[0]
			}
			return rec[(i-1)%n]
		}},
		{"the vendor's first hour", emStart, n, func(i int) float64 { return rec[i] }},
		{"two hours on", emStart.Add(2 * time.Hour), 30, func(i int) float64 {
			if j := i + 2; j < n {
				return rec[j]
			}
			return rec[(i+2)%n]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var l logs
			a := newEM(t, replay(t, emData, "forecast_DE.json"))
			f := emForecaster(t, a, ingest.NewManualClock(emStart.Add(-13*time.Minute)), &l, Config{})
			fc, err := f.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: tc.start, Horizon: tc.horizon})
			if err != nil {
				t.Fatal(err)
			}
			if len(fc.Series.Values) != tc.horizon || !fc.Series.Start.Equal(tc.start) {
				t.Fatalf("answered %d hours from %s, want %d from %s", len(fc.Series.Values), fc.Series.Start, tc.horizon, tc.start)
			}
			for i, v := range fc.Series.Values {
				if w := tc.want(i); v != w {
					t.Fatalf("hour %d = %v, want %v", i, v, w)
				}
			}
			p := fc.Provenance
			if p.Source != forecast.SourceVendor || p.Vendor != "electricitymaps" || p.Model != "vendor:electricitymaps" ||
				p.Version != "2024-03-06T19:47:04Z" || !p.IssuedAt.Equal(tc.start) {
				t.Fatalf("provenance %+v", p)
			}
			if strings.Contains(l.String(), a.secret) {
				t.Fatal("the token is in the logs")
			}
		})
	}
}

// WattTime's marginal rates come in lbs/MWh every 5 minutes: the step
// answers hourly means in gCO2/kWh, for the configured zone and the
// marginal signal only.
func TestWattTimeMarginalRecorded(t *testing.T) {
	t.Parallel()
	const file = "watttime_forecast_CAISO_NORTH_24h.json"
	var rec struct {
		Data []struct {
			PointTime string  `json:"point_time"`
			Value     float64 `json:"value"`
		} `json:"data"`
	}
	if err := json.Unmarshal(fixture(t, "testdata", file), &rec); err != nil {
		t.Fatal(err)
	}
	sums, counts := map[time.Time]float64{}, map[time.Time]int{}
	for _, p := range rec.Data {
		at, err := time.Parse(time.RFC3339, p.PointTime)
		if err != nil {
			t.Fatal(err)
		}
		h := at.UTC().Truncate(time.Hour)
		sums[h] += p.Value
		counts[h]++
	}
	first := time.Date(2024, 1, 15, 13, 0, 0, 0, time.UTC)
	var l logs
	a := newWT(t, replay(t, "testdata", file))
	f := wtForecaster(t, a, ingest.NewManualClock(first.Add(-25*time.Minute)), &l, Config{})
	const horizon = 23 // the whole hours of the answer
	fc, err := f.Forecast(context.Background(), forecast.Request{Zone: "US-CAL-CISO", Signal: forecast.SignalMarginal, Start: first, Horizon: horizon})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range fc.Series.Values {
		h := first.Add(time.Duration(i) * time.Hour)
		if counts[h] != 12 {
			t.Fatalf("hour %s has %d points in the recording", h, counts[h])
		}
		want := sums[h] / 12 * watttime.LbsPerMWh
		if math.Abs(v-want) > 1e-9 {
			t.Fatalf("hour %d = %v g/kWh, want %v (mean lbs/MWh × %v)", i, v, want, watttime.LbsPerMWh)
		}
	}
	if p := fc.Provenance; p.Vendor != "watttime" || p.Model != "vendor:watttime" || p.Version != "2023-03-01" || p.Source != forecast.SourceVendor {
		t.Fatalf("provenance %+v", p)
	}
	for _, req := range []forecast.Request{
		{Zone: "US-CAL-CISO", Signal: forecast.SignalLifecycle, Start: first, Horizon: 1},
		{Zone: "DE", Signal: forecast.SignalMarginal, Start: first, Horizon: 1},
	} {
		if f.Serves(req.Zone, req.Signal) {
			t.Errorf("serves %s %s", req.Zone, req.Signal)
		}
		_, err := f.Forecast(context.Background(), req)
		wantCode(t, err, forecast.ENOTFOUND)
	}
	if got := a.calls.Load(); got != 1 {
		t.Fatalf("%d forecast requests, want 1", got)
	}
	if strings.Contains(l.String(), a.secret) {
		t.Fatal("the password is in the logs")
	}
}

// Requests within MaxAge share one call; the vendor is asked again after.
// The metrics count each lookup and call.
func TestCache(t *testing.T) {
	t.Parallel()
	a := newEM(t, replay(t, emData, "forecast_DE.json"))
	clk := ingest.NewManualClock(emStart.Add(-10 * time.Minute))
	reg := prometheus.NewRegistry()
	f := emForecaster(t, a, clk, &logs{}, Config{MaxAge: 10 * time.Minute, Registerer: reg})
	req := forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: emStart, Horizon: 24}
	for range 5 {
		if _, err := f.Forecast(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.calls.Load(); got != 1 {
		t.Fatalf("%d calls within MaxAge, want 1", got)
	}
	clk.Add(10 * time.Minute)
	if _, err := f.Forecast(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := a.calls.Load(); got != 2 {
		t.Fatalf("%d calls after MaxAge, want 2", got)
	}
	if _, err := f.Forecast(context.Background(), forecast.Request{Zone: "FR", Signal: forecast.SignalLifecycle, Start: emStart, Horizon: 24}); err == nil {
		t.Fatal("FR answered from DE's forecast")
	}
	for _, c := range []struct {
		metric, label string
		want          float64
	}{
		{"lookups", ResultCached, 4}, {"lookups", ResultFetched, 2}, {"lookups", ResultFailed, 1},
		{"requests", "ok", 2}, {"requests", forecast.ENOTFOUND, 1},
	} {
		vec := f.lookups
		if c.metric == "requests" {
			vec = f.requests
		}
		if got := testutil.ToFloat64(vec.WithLabelValues("electricitymaps", c.label)); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.metric, c.label, got, c.want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "carbongate_vendor_forecast_lookups_total", "carbongate_vendor_requests_total"); err != nil || n != 5 {
		t.Fatalf("%d series registered (%v), want 5", n, err)
	}
}

// A vendor that fails (rate limited, down, garbled, slow, refusing the
// token) makes the step fail, the chain answer from the next step with the
// vendor in Skipped, and the vendor not be asked again until the failure
// has held for its backoff. The token is never logged.
func TestFailuresFallThrough(t *testing.T) {
	t.Parallel()
	good := fixture(t, emData, "forecast_DE.json")
	for _, tc := range []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request, n int)
		token  string // "" = the right one
		code   string
		hold   time.Duration // how long the failure holds
	}{
		{"429 with Retry-After", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Header().Set("Retry-After", "300")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"message":"rate limit exceeded"}`))
		}, "", forecast.EUNAVAILABLE, 5 * time.Minute},
		{"503", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, "", forecast.EUNAVAILABLE, DefaultBackoff},
		{"malformed", func(w http.ResponseWriter, _ *http.Request, _ int) {
			w.Write(good[:len(good)/2])
		}, "", forecast.EINVALID, DefaultMaxBackoff},
		{"timeout", func(w http.ResponseWriter, r *http.Request, _ int) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, "", forecast.EUNAVAILABLE, DefaultBackoff},
		{"token refused", func(w http.ResponseWriter, _ *http.Request, _ int) { w.Write(good) }, "wrong-" + "token", forecast.EUNAUTHORIZED, DefaultMaxBackoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var l logs
			a := newEM(t, tc.handle)
			clk := ingest.NewManualClock(emStart.Add(-10 * time.Minute))
			secret := a.secret
			if tc.token != "" {
				a.secret = tc.token // the client is given a wrong token
			}
			f := emForecaster(t, a, clk, &l, Config{Timeout: 100 * time.Millisecond})
			a.secret = secret
			chain := vendorChain(t, f, time.Second)
			req := forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: emStart, Horizon: 24}
			_, err := f.Forecast(context.Background(), req)
			wantCode(t, err, tc.code)
			calls := a.calls.Load()
			fc, err := chain.Forecast(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			p := fc.Provenance
			if p.Source != forecast.SourceClimatology || len(p.Skipped) != 1 || p.Skipped[0] != "vendor electricitymaps" ||
				!strings.Contains(p.Reason, "vendor electricitymaps: unavailable: electricitymaps") || !strings.Contains(p.Reason, "not asked again before") {
				t.Fatalf("provenance %+v", p)
			}
			if got := a.calls.Load(); got != calls {
				t.Fatalf("the vendor was asked again (%d calls, then %d) while its failure holds", calls, got)
			}
			clk.Add(tc.hold - time.Second)
			if _, err := f.Forecast(context.Background(), req); forecast.ErrorCode(err) != forecast.EUNAVAILABLE || a.calls.Load() != calls {
				t.Fatalf("1 s before the hold ends: err %v, %d calls (want %d)", err, a.calls.Load(), calls)
			}
			clk.Add(time.Second)
			f.Forecast(context.Background(), req)
			if tc.token == "" && a.calls.Load() != calls+1 {
				t.Fatalf("after the hold: %d calls, want %d", a.calls.Load(), calls+1)
			}
			for _, s := range []string{secret, tc.token} {
				if s != "" && strings.Contains(l.String(), s) {
					t.Fatalf("a token is in the logs:\n%s", l.String())
				}
			}
		})
	}
}

// Beyond the rate limit a step fails at once, without a call.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	a := newEM(t, replay(t, emData, "forecast_DE.json"))
	f := emForecaster(t, a, ingest.NewManualClock(emStart), &logs{}, Config{Rate: 1.0 / 3600, Burst: 1})
	if _, err := f.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: emStart, Horizon: 24}); err != nil {
		t.Fatal(err)
	}
	_, err := f.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalDirect, Start: emStart, Horizon: 24})
	wantCode(t, err, forecast.EUNAVAILABLE)
	if !strings.Contains(forecast.ErrorMessage(err), "rate limit") {
		t.Fatalf("error %v does not name the rate limit", err)
	}
	if got := a.calls.Load(); got != 1 {
		t.Fatalf("%d calls, want 1", got)
	}
}

// A request outside the vendor's forecast (a replay clock in the past, or
// a start the vendor's first hour is more than MaxLead after) is
// EUNAVAILABLE: the chain moves on.
func TestOutsideTheVendorsForecast(t *testing.T) {
	t.Parallel()
	a := newEM(t, replay(t, emData, "forecast_DE.json"))
	f := emForecaster(t, a, ingest.NewManualClock(emStart), &logs{}, Config{})
	for _, start := range []time.Time{
		time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC),
		emStart.Add(-MaxLead - time.Hour),
		emStart.Add(time.Duration(len(recordedEM(t))) * time.Hour),
	} {
		_, err := f.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: start, Horizon: 24})
		wantCode(t, err, forecast.EUNAVAILABLE)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {Client: ElectricityMaps{}, Rate: -1}, {Client: ElectricityMaps{}, MaxAge: -time.Second}} {
		_, err := New(cfg)
		wantCode(t, err, forecast.EINVALID)
	}
}

// A vendor slower than the step's deadline: the step times out and the
// chain moves on, but the call goes on and its answer serves the next
// request without another call.
func TestSlowVendorAnswersTheNextRequest(t *testing.T) {
	t.Parallel()
	body := fixture(t, emData, "forecast_DE.json")
	answered := make(chan struct{})
	a := newEM(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		time.Sleep(300 * time.Millisecond)
		w.Write(body)
		close(answered)
	})
	f := emForecaster(t, a, ingest.NewManualClock(emStart), &logs{}, Config{Timeout: 10 * time.Second})
	chain := vendorChain(t, f, 50*time.Millisecond)
	req := forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: emStart, Horizon: 24}
	fc, err := chain.Forecast(context.Background(), req)
	if err != nil || fc.Provenance.Source != forecast.SourceClimatology || !strings.Contains(fc.Provenance.Reason, "timed out") {
		t.Fatalf("first request: %+v, %v; want climatology after the vendor step timed out", fc.Provenance, err)
	}
	<-answered
	deadline := time.Now().Add(5 * time.Second)
	for {
		fc, err = chain.Forecast(context.Background(), req)
		if err == nil && fc.Provenance.Source == forecast.SourceVendor || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || fc.Provenance.Source != forecast.SourceVendor {
		t.Fatalf("after the vendor answered: %+v, %v", fc.Provenance, err)
	}
	if got := a.calls.Load(); got != 1 {
		t.Fatalf("%d calls, want 1", got)
	}
}
