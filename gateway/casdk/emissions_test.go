package casdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
)

// countingObserved counts the reads of Observed; onRead, when set, runs
// after each.
type countingObserved struct {
	inner  Observed
	reads  atomic.Int64
	onRead func(ctx context.Context)
}

func (o *countingObserved) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	o.reads.Add(1)
	s, err := o.inner.Observed(ctx, zone, signal, from, to)
	if o.onRead != nil {
		o.onRead(ctx)
	}
	return s, err
}

// newCountingAPI is newTestAPI's API with its observed data read through
// a countingObserved.
func newCountingAPI(t testing.TB, cfg Config) (*echo.Echo, *countingObserved) {
	t.Helper()
	_, mem := newTestAPI(t, false)
	obs := &countingObserved{inner: mem}
	cfg.Service, cfg.Observed, cfg.ObservedSource, cfg.Prefixes = fakeService{now: docNow, zones: testZones}, obs, "store", []string{DefaultPrefix}
	return serve(t, cfg), obs
}

// TestEmissionsRepeatedLocationReadOnce: the amplification of a location
// given 100 times over a long period: it is read and answered once.
func TestEmissionsRepeatedLocationReadOnce(t *testing.T) {
	t.Parallel()
	e, obs := newCountingAPI(t, Config{})
	period := "&time=2022-05-01T00:00:00Z&toTime=2022-07-01T00:00:00Z"
	for _, route := range []string{"bylocations", "bylocations/best"} {
		obs.reads.Store(0)
		url := "/casdk/emissions/" + route + "?location=DE" + strings.Repeat("&location=DE&location=de", 49) + "&location=De" + period
		a := do(t, e, http.MethodGet, url, "", "")
		if a.status != http.StatusOK {
			t.Fatalf("%s: status %d: %.300s", route, a.status, a.body)
		}
		got := decode[[]emissionsDTO](t, a)
		once := decode[[]emissionsDTO](t, do(t, e, http.MethodGet, "/casdk/emissions/"+route+"?location=DE"+period, "", ""))
		if len(got) != len(once) || len(once) == 0 {
			t.Errorf("%s: %d values for DE given 100 times, want the %d of DE given once", route, len(got), len(once))
		}
		if n := obs.reads.Load(); n != 2 {
			t.Errorf("%s: observed data read %d times for two requests of one location, want 2", route, n)
		}
		if p := a.header.Get(HeaderProvenance); strings.Count(p, "location=") != 1 {
			t.Errorf("%s: provenance %q, want one entry", route, p)
		}
	}
	// In a current forecast too.
	a := do(t, e, http.MethodGet, "/casdk/emissions/forecasts/current?location=DE"+strings.Repeat("&location=DE", 99), "", "")
	if got := decode[[]forecastDTO](t, a); a.status != http.StatusOK || len(got) != 1 {
		t.Errorf("current forecast of DE given 100 times: status %d, %d forecasts, want 1", a.status, len(got))
	}
}

// TestEmissionsBoundPerRequest: the distinct locations × hours of a
// request are at most MaxPoints (default: 100 locations over 31 days, 8
// over a year); beyond, a 400 naming location and the end of the period,
// before anything is read.
func TestEmissionsBoundPerRequest(t *testing.T) {
	t.Parallel()
	e, obs := newCountingAPI(t, Config{})
	ten := []string{"northeurope", "eu-west-1", "IE", "eastus", "US-MIDA-PJM", "westus", "US-CAL-CISO", "DE", "aws:shared-1", "gcp:shared-1"}
	query := func(names []string, period string) string {
		return "location=" + strings.Join(names, "&location=") + period
	}
	year := "&time=2021-07-19T00:00:00Z&toTime=2022-07-19T00:00:00Z"
	for _, route := range []string{"bylocations", "bylocations/best"} {
		a := do(t, e, http.MethodGet, "/casdk/emissions/"+route+"?"+query(ten, year), "", "")
		p := decode[problem](t, a)
		if a.status != http.StatusBadRequest || len(p.Errors["location"]) == 0 || len(p.Errors["toTime"]) == 0 || !strings.Contains(p.Errors["toTime"][0], "87600") {
			t.Errorf("%s: 10 locations over a year: status %d %s, want 400 naming location and toTime with the 87600 values asked", route, a.status, a.body)
		}
		if n := obs.reads.Load(); n != 0 {
			t.Errorf("%s: %d reads for a refused request", route, n)
		}
		if a := do(t, e, http.MethodGet, "/casdk/emissions/"+route+"?"+query(ten[:8], year), "", ""); a.status != http.StatusOK {
			t.Errorf("%s: 8 locations over a year: status %d %.300s, want 200", route, a.status, a.body)
		}
		month := "&time=2022-05-01T00:00:00Z&toTime=2022-06-01T00:00:00Z"
		if a := do(t, e, http.MethodGet, "/casdk/emissions/"+route+"?"+query(ten, month), "", ""); a.status != http.StatusOK {
			t.Errorf("%s: 10 locations over a month: status %d %.300s, want 200", route, a.status, a.body)
		}
		obs.reads.Store(0)
	}
	// The items of an average batch share the bound.
	var items []string
	for i := range 10 {
		items = append(items, fmt.Sprintf(`{"location":%q,"startTime":"2021-07-19T00:00:00Z","endTime":"2022-07-19T00:00:00Z"}`, ten[i]))
	}
	a := do(t, e, http.MethodPost, "/casdk/emissions/average-carbon-intensity/batch", "application/json", "["+strings.Join(items, ",")+"]")
	if p := decode[problem](t, a); a.status != http.StatusBadRequest || len(p.Errors["[8].endTime"]) == 0 {
		t.Errorf("average batch of 10 years: status %d %s, want 400 naming [8].endTime", a.status, a.body)
	}
}

// TestEmissionsStopWhenTheRequestIsDone: once the request's context is
// done, no further location is read.
func TestEmissionsStopWhenTheRequestIsDone(t *testing.T) {
	t.Parallel()
	e, obs := newCountingAPI(t, Config{})
	var cancel context.CancelFunc
	obs.onRead = func(context.Context) { cancel() }
	for _, url := range []string{
		"/casdk/emissions/bylocations?location=DE&location=eastus&location=westus&location=IE&time=2022-05-01&toTime=2022-06-01",
		"/casdk/emissions/bylocations/best?location=DE&location=eastus&location=westus&location=IE&time=2022-05-01&toTime=2022-06-01",
	} {
		obs.reads.Store(0)
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if n := obs.reads.Load(); n != 1 {
			t.Errorf("%s: %d reads after the request was canceled by the first, want 1", url, n)
		}
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d %s, want 503", url, rec.Code, rec.Body)
		}
		cancel()
	}
}

// TestWriteEmissionsIsEncodingJSON: the streamed answer is byte for byte
// encoding/json's of the same values, across flushes, NaN hours left out.
func TestWriteEmissionsIsEncodingJSON(t *testing.T) {
	t.Parallel()
	start := time.Date(2022, 5, 1, 0, 0, 0, 0, time.UTC)
	vals := func(n int, f func(i int) float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	locs := []located{
		{name: "DE", s: forecast.Series{Start: start, Values: vals(3000, func(i int) float64 { return float64(i%97) * 1.25 })}},
		{name: `a<b>&"c"é`, s: forecast.Series{Start: start.Add(time.Hour), Values: []float64{math.NaN(), 1e-7, 1e21, 0, -3.5, math.Inf(1), 123456789.123}}},
		{name: "empty", s: forecast.Series{Start: start}},
	}
	var want []emissionsData
	for _, l := range locs {
		for i, v := range l.s.Values {
			if known(v) && v != 0 {
				want = append(want, emissionsData{Location: l.name, Time: stamp(l.s.Start.Add(time.Duration(i) * time.Hour)), Rating: v, Duration: timeSpan(time.Hour)})
			}
		}
	}
	var wb bytes.Buffer
	if err := json.NewEncoder(&wb).Encode(want); err != nil { // as echo's c.JSON
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	if err := writeEmissions(context.Background(), c, locs, func(v float64) bool { return v != 0 }); err != nil {
		t.Fatal(err)
	}
	if got := rec.Body.Bytes(); !bytes.Equal(got, wb.Bytes()) {
		t.Fatalf("streamed %d bytes, encoding/json %d:\n%.400s\nwant\n%.400s", len(got), wb.Len(), got, wb.Bytes())
	}
	if wb.Len() < 2*flushBytes {
		t.Fatalf("the answer (%d bytes) is not longer than two flushes", wb.Len())
	}
	if ct := rec.Header().Get(echo.HeaderContentType); ct != echo.MIMEApplicationJSON {
		t.Errorf("Content-Type %q", ct)
	}
}
