package casdk

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway"
)

// fakeService forecasts every zone with value(zone, hour index) from the
// hour of now, for 24 hours, issued at that hour.
type fakeService struct {
	now   time.Time
	zones []gateway.ZoneInfo
}

func value(zone forecast.Zone, i int) float64 {
	return float64(100 + len(zone)*7 + (i*37)%50)
}

func (f fakeService) Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (forecast.Forecast, gateway.Reading, error) {
	start := forecast.HourFloor(f.now)
	vs := make([]float64, 24)
	for i := range vs {
		vs[i] = value(zone, i)
	}
	return forecast.Forecast{Zone: zone, Signal: signal, Series: forecast.Series{Start: start, Values: vs},
		Provenance: forecast.Provenance{Model: "m-" + string(zone), Version: "2", Source: forecast.SourceZone, IssuedAt: start}}, f.Now(), nil
}

func (f fakeService) Zones() []gateway.ZoneInfo { return f.zones }
func (f fakeService) Now() gateway.Reading      { return gateway.Reading{Mode: "replay", Now: f.now} }

var testZones = []gateway.ZoneInfo{
	{Zone: "IE", Locations: []gateway.Location{{Provider: "azure", Region: "northeurope"}, {Provider: "aws", Region: "eu-west-1"}, {Provider: "gcp", Region: "shared-1"}}},
	{Zone: "US-MIDA-PJM", Locations: []gateway.Location{{Provider: "azure", Region: "eastus"}, {Provider: "aws", Region: "shared-1"}}},
	{Zone: "US-CAL-CISO", Locations: []gateway.Location{{Provider: "azure", Region: "westus"}}},
	{Zone: "DE"},
}

// The documentation's current-forecast example was requested at this time.
var docNow = time.Date(2022, 7, 19, 13, 37, 49, 0, time.UTC)

func newTestAPI(t testing.TB, withForecasts bool) (*echo.Echo, *store.Memory) {
	t.Helper()
	mem := store.NewMemory()
	ctx := context.Background()
	// Observed: DE and US-MIDA-PJM hourly from 2022-05-01 to now, value 200 + hour of day.
	for _, z := range []forecast.Zone{"DE", "US-MIDA-PJM"} {
		var obs []store.Observation
		for h := time.Date(2022, 5, 1, 0, 0, 0, 0, time.UTC); h.Before(docNow); h = h.Add(time.Hour) {
			obs = append(obs, store.Observation{Time: h, Value: float64(200 + h.Hour())})
		}
		if err := mem.UpsertObserved(ctx, z, forecast.SignalLifecycle, obs); err != nil {
			t.Fatal(err)
		}
	}
	// Forecasts of US-MIDA-PJM issued at 06:00, 12:00 and 13:00 on 2022-06-01,
	// each 24 hours, value issue hour × 10 + target hour.
	var rows []store.ForecastRow
	for _, ih := range []int{6, 12, 13} {
		issued := time.Date(2022, 6, 1, ih, 0, 0, 0, time.UTC)
		for i := range 24 {
			tt := issued.Add(time.Duration(i) * time.Hour)
			rows = append(rows, store.ForecastRow{Zone: "US-MIDA-PJM", Signal: forecast.SignalLifecycle, ModelName: "m", ModelVersion: "1",
				IssuedAt: issued, TargetTime: tt, Value: float64(ih*10 + tt.Hour()), Lower: math.NaN(), Upper: math.NaN()})
		}
	}
	if err := mem.WriteForecasts(ctx, "test", nil, rows); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Service: fakeService{now: docNow, zones: testZones}, Observed: mem, ObservedSource: "store",
		Prefixes: []string{DefaultPrefix, ""}}
	if withForecasts {
		cfg.Forecasts = mem
	}
	return serve(t, cfg), mem
}

// serve registers the API of cfg on a new Echo.
func serve(t testing.TB, cfg Config) *echo.Echo {
	t.Helper()
	api, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	api.Register(e)
	return e
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, e *echo.Echo, method, url, contentType, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set(echo.HeaderContentType, contentType)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return answer{rec.Code, rec.Header(), rec.Body.Bytes()}
}

func decode[T any](t *testing.T, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("answer %d %s: %v", a.status, a.body, err)
	}
	return v
}

type forecastDTO struct {
	GeneratedAt, RequestedAt, Location, DataStartAt, DataEndAt string
	WindowSize                                                 int
	OptimalDataPoints, ForecastData                            []struct {
		Location, Timestamp string
		Duration            int
		Value               float64
	}
}

// TestCurrentForecastDocumentedExample is the SDK documentation's
// /emissions/forecasts/current example: northeurope, dataStartAt 14:00,
// dataEndAt 04:38 the next day, windowSize 10, requested at 13:37:49.
func TestCurrentForecastDocumentedExample(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, false)
	a := do(t, e, http.MethodGet, "/casdk/emissions/forecasts/current?location=northeurope&dataStartAt=2022-07-19T14:00:00Z&dataEndAt=2022-07-20T04:38:00Z&windowSize=10", "", "")
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	fcs := decode[[]forecastDTO](t, a)
	if len(fcs) != 1 {
		t.Fatalf("%d forecasts, want 1", len(fcs))
	}
	f := fcs[0]
	if f.Location != "northeurope" || f.DataStartAt != "2022-07-19T14:00:00Z" || f.DataEndAt != "2022-07-20T04:38:00Z" || f.WindowSize != 10 ||
		f.GeneratedAt != "2022-07-19T13:00:00Z" || f.RequestedAt != "2022-07-19T13:37:49Z" {
		t.Errorf("forecast header %+v", f)
	}
	// 10-minute windows from 14:00, one per hourly point, the last ending
	// by 04:38: 14:00 … 04:00, each inside one forecast hour (index 1 … 15
	// of the forecast issued at 13:00).
	if len(f.ForecastData) != 15 {
		t.Fatalf("%d windows, want 15: %+v", len(f.ForecastData), f.ForecastData)
	}
	lowest := math.Inf(1)
	for i, p := range f.ForecastData {
		ts := time.Date(2022, 7, 19, 14+i, 0, 0, 0, time.UTC).Format(time.RFC3339)
		if p.Timestamp != ts || p.Duration != 10 || p.Value != value("IE", i+1) || p.Location != "northeurope" {
			t.Errorf("window %d = %+v, want %s 10 min %v", i, p, ts, value("IE", i+1))
		}
		lowest = math.Min(lowest, value("IE", i+1))
	}
	var ties int
	for i := range 15 {
		if value("IE", i+1) == lowest {
			ties++
		}
	}
	if len(f.OptimalDataPoints) != ties || ties == 0 {
		t.Fatalf("%d optimal points, want every one of the %d ties of %v", len(f.OptimalDataPoints), ties, lowest)
	}
	for _, p := range f.OptimalDataPoints {
		if p.Value != lowest {
			t.Errorf("optimal point %+v is not the lowest %v", p, lowest)
		}
	}
	if got := a.header.Get(HeaderProvenance); got != `location="northeurope"; zone="IE"; source="zone"; model="m-IE"; version="2"; issued_at="2022-07-19T13:00:00Z"` {
		t.Errorf("provenance %q", got)
	}
}

// TestForecastsBatchDocumentedExample is the SDK documentation's
// /emissions/forecasts/batch example (eastus, then westus with an hour of
// one digit).
func TestForecastsBatchDocumentedExample(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, true)
	eastus := `{"location": "eastus", "dataStartAt": "2022-06-01T14:00:00Z", "dataEndAt": "2022-06-01T18:00:00Z", "windowSize": 30, "requestedAt": "2022-06-01T12:01:00Z"}`
	a := do(t, e, http.MethodPost, "/casdk/emissions/forecasts/batch", "application/json", "["+eastus+"]")
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	f := decode[[]forecastDTO](t, a)[0]
	// The forecast issued at 12:00 (not 13:00, after requestedAt), windows
	// of 30 minutes at 14:00 … 17:00 (18:00's would end after dataEndAt).
	if f.GeneratedAt != "2022-06-01T12:00:00Z" || f.RequestedAt != "2022-06-01T12:01:00Z" || f.WindowSize != 30 || len(f.ForecastData) != 4 {
		t.Fatalf("forecast %+v", f)
	}
	for i, p := range f.ForecastData {
		if want := float64(120 + 14 + i); p.Value != want || p.Duration != 30 {
			t.Errorf("window %d = %+v, want value %v", i, p, want)
		}
	}
	if len(f.OptimalDataPoints) != 1 || f.OptimalDataPoints[0].Timestamp != "2022-06-01T14:00:00Z" {
		t.Errorf("optimal %+v", f.OptimalDataPoints)
	}
	if got := a.header.Get(HeaderProvenance); !strings.Contains(got, `source="forecast-store"; model="m"; version="1"; issued_at="2022-06-01T12:00:00Z"`) {
		t.Errorf("provenance %q", got)
	}
	westus := `{"location": "westus", "dataStartAt": "2022-06-13T08:00:00Z", "dataEndAt": "2022-06-13T10:00:00Z", "windowSize": 30, "requestedAt": "2022-06-13T6:05:00Z"}`
	a = do(t, e, http.MethodPost, "/casdk/emissions/forecasts/batch", "application/json", "["+eastus+","+westus+"]")
	if p := decode[problem](t, a); a.status != http.StatusBadRequest || len(p.Errors["[1].requestedAt"]) == 0 {
		t.Errorf("westus, whose zone has no stored forecast: status %d %s, want 400 naming [1].requestedAt", a.status, a.body)
	}
}

func TestForecastsBatchWithoutStore(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, false)
	a := do(t, e, http.MethodPost, "/casdk/emissions/forecasts/batch", "application/json", `[{"location":"eastus","requestedAt":"2022-06-01T12:01:00Z"}]`)
	if p := decode[problem](t, a); a.status != http.StatusBadRequest || p.Title != "NoForecastStore" || !strings.Contains(p.Detail, "--store") {
		t.Errorf("status %d %s, want 400 saying a forecast store is needed", a.status, a.body)
	}
	// A bad body is still a 400.
	a = do(t, e, http.MethodPost, "/casdk/emissions/forecasts/batch", "application/json", `[{"location":"eastus"}]`)
	if p := decode[problem](t, a); a.status != http.StatusBadRequest || len(p.Errors["[0].requestedAt"]) == 0 {
		t.Errorf("status %d %s, want 400 naming [0].requestedAt", a.status, a.body)
	}
}

type emissionsDTO struct {
	Location, Time, Duration string
	Rating                   float64
}

// TestEmissionsDocumentedExamples runs the documentation's emissions and
// average examples (location names as there, times of the observed data).
func TestEmissionsDocumentedExamples(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, false)
	obs := func(h int) float64 { return float64(200 + h) }
	for _, tt := range []struct {
		name, method, url, body string
		status                  int
		check                   func(t *testing.T, a answer)
	}{
		{name: "bylocation with time and toTime as dates", method: "GET", url: "/casdk/emissions/bylocation?location=eastus&time=2022-05-01&toTime=2022-05-02", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[[]emissionsDTO](t, a)
				if len(got) != 24 || got[0].Time != "2022-05-01T00:00:00Z" || got[23].Rating != obs(23) || got[0].Duration != "01:00:00" || got[0].Location != "eastus" {
					t.Errorf("got %d points %+v", len(got), got)
				}
			}},
		{name: "bylocation with the exporter's startTime and endTime", method: "GET", url: "/emissions/bylocation?location=eastus&startTime=2022-05-01T10:30:00Z&endTime=2022-05-01T12:00:00Z", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[[]emissionsDTO](t, a)
				if len(got) != 2 || got[0].Time != "2022-05-01T10:00:00Z" || got[1].Rating != obs(11) {
					t.Errorf("got %+v, want the hours 10:00 and 11:00", got)
				}
			}},
		{name: "bylocation without times: the hour holding now", method: "GET", url: "/casdk/emissions/bylocation?location=DE", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[[]emissionsDTO](t, a)
				if len(got) != 1 || got[0].Time != "2022-07-19T13:00:00Z" {
					t.Errorf("got %+v", got)
				}
			}},
		{name: "bylocations of two locations", method: "GET", url: "/casdk/emissions/bylocations?location=eastus&location=DE&time=2022-05-17T20:00:00Z&toTime=2022-05-17T22:00:00Z", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[[]emissionsDTO](t, a)
				if len(got) != 4 || got[0].Location != "eastus" || got[2].Location != "DE" {
					t.Errorf("got %+v", got)
				}
				if !strings.Contains(a.header.Get(HeaderProvenance), `location="DE"; zone="DE"; source="store"`) {
					t.Errorf("provenance %q", a.header.Get(HeaderProvenance))
				}
			}},
		{name: "bylocations/best returns every tie", method: "GET", url: "/casdk/emissions/bylocations/best?location=eastus&location=DE&time=2022-05-17T20:00:00Z&toTime=2022-05-17T22:00:00Z", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[[]emissionsDTO](t, a)
				if len(got) != 2 || got[0].Rating != obs(20) || got[1].Rating != obs(20) || got[0].Location == got[1].Location {
					t.Errorf("got %+v, want 20:00 of both", got)
				}
			}},
		{name: "no observed data is 204", method: "GET", url: "/casdk/emissions/bylocations?location=northeurope&time=2022-05-17T20:00:00Z&toTime=2022-05-17T22:00:00Z", status: 204},
		{name: "the future is not observed", method: "GET", url: "/casdk/emissions/bylocation?location=DE&time=2022-07-20T00:00:00Z", status: 204},
		{name: "average-carbon-intensity weighs partial hours", method: "GET", url: "/casdk/emissions/average-carbon-intensity?location=eastus&startTime=2022-07-19T10:30:00Z&endTime=2022-07-19T12:00:00Z", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[carbonIntensityDTO](t, a)
				if want := (obs(10)*0.5 + obs(11)) / 1.5; math.Abs(got.CarbonIntensity-want) > 1e-9 || got.StartTime != "2022-07-19T10:30:00Z" || got.Location != "eastus" {
					t.Errorf("got %+v, want %v", got, want)
				}
			}},
		{name: "average-carbon-intensity/batch, times without offset", method: "POST", url: "/casdk/emissions/average-carbon-intensity/batch",
			body: `[{"location": "eastus", "startTime": "2022-05-01T14:00:00", "endTime": "2022-05-01T18:00:00"}, {"location": "DE", "startTime": "2022-06-01T14:00:00", "endTime": "2022-06-01T18:00:00"}]`, status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[[]carbonIntensityDTO](t, a)
				want := (obs(14) + obs(15) + obs(16) + obs(17)) / 4
				if len(got) != 2 || got[0].CarbonIntensity != want || got[1].CarbonIntensity != want || got[1].Location != "DE" {
					t.Errorf("got %+v, want two of %v", got, want)
				}
			}},
		{name: "a period the data do not cover is 400", method: "GET", url: "/casdk/emissions/average-carbon-intensity?location=eastus&startTime=2022-07-19T10:00:00Z&endTime=2022-07-19T16:00:00Z", status: 400},
		{name: "locations lists Azure names, zone ids and qualified collisions", method: "GET", url: "/casdk/locations", status: 200,
			check: func(t *testing.T, a answer) {
				got := decode[map[string]locationDTO](t, a)
				for _, n := range []string{"northeurope", "eastus", "DE", "IE", "eu-west-1", "aws:shared-1", "gcp:shared-1"} {
					if got[n].Name != n {
						t.Errorf("no location %s in %v", n, got)
					}
				}
				if _, ok := got["shared-1"]; ok {
					t.Error("the colliding bare name shared-1 is listed")
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ct := ""
			if tt.body != "" {
				ct = "application/json"
			}
			a := do(t, e, tt.method, tt.url, ct, tt.body)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// TestBadInputNamesTheParameter: every bad parameter is a 400 in the SDK's
// error document naming it.
func TestBadInputNamesTheParameter(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, true)
	for _, tt := range []struct {
		url, body, param string
	}{
		{url: "/casdk/emissions/forecasts/current", param: "location"},
		{url: "/casdk/emissions/forecasts/current?location=nowhere", param: "location"},
		{url: "/casdk/emissions/forecasts/current?location=shared-1", param: "location"},
		{url: "/casdk/emissions/forecasts/current?location=DE&windowSize=x", param: "windowSize"},
		{url: "/casdk/emissions/forecasts/current?location=DE&windowSize=-5", param: "windowSize"},
		{url: "/casdk/emissions/forecasts/current?location=DE&windowSize=99999999999", param: "windowSize"},
		{url: "/casdk/emissions/forecasts/current?location=DE&dataStartAt=yesterday", param: "dataStartAt"},
		{url: "/casdk/emissions/forecasts/current?location=DE&dataEndAt=", param: "dataEndAt"},
		{url: "/casdk/emissions/forecasts/current?location=DE&windowSize=", param: "windowSize"},
		{url: "/casdk/emissions/bylocations?location=DE&time=", param: "time"},
		{url: "/casdk/emissions/forecasts/current?location=DE&dataStartAt=2022-07-19T15:00:00Z&dataEndAt=2022-07-19T14:00:00Z", param: "dataStartAt"},
		{url: "/casdk/emissions/forecasts/current?location=DE&dataStartAt=2022-07-01T00:00:00Z", param: "dataStartAt"},
		{url: "/casdk/emissions/forecasts/current?location=DE&dataEndAt=2022-08-01T00:00:00Z", param: "dataEndAt"},
		{url: "/casdk/emissions/bylocation?location=DE&time=2022-05-01&startTime=2022-05-02", param: "time"},
		{url: "/casdk/emissions/bylocation?location=DE&location=IE", param: "location"},
		{url: "/casdk/emissions/bylocations?location=DE&toTime=2022-05-01", param: "time"},
		{url: "/casdk/emissions/bylocations?location=DE&time=2022-05-02&toTime=2022-05-01", param: "time"},
		{url: "/casdk/emissions/bylocations?location=DE&time=2000-01-01&toTime=2022-05-01", param: "toTime"},
		{url: "/casdk/emissions/average-carbon-intensity?location=DE&endTime=2022-05-01", param: "startTime"},
		{url: "/casdk/emissions/average-carbon-intensity?startTime=2022-05-01&endTime=2022-05-02", param: "location"},
		{url: "/casdk/emissions/average-carbon-intensity?location=DE&startTime=2022-05-01&endTime=0001-01-01T00:00:00+01:00", param: "endTime"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `[{"location":"DE","startTime":"2022-05-01","endTime":"2022-05-01"}]`, param: "[0].startTime"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `[{"location":"DE","startTime":"2022-05-01","endTime":"2022-05-02","x":1}]`, param: "[0]"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `[{"location":7}]`, param: "[0].location"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `{}`, param: "body"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `[]`, param: "body"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `[1]`, param: "[0]"},
		{url: "/casdk/emissions/average-carbon-intensity/batch", body: `[{"location":"DE","startTime":"2022-05-01","endTime":"2022-05-02"},{"location":"DE","startTime":"2022-05-01","endTime":"2022-05-02","location":"IE"}]`, param: "[1].location"},
		{url: "/casdk/emissions/forecasts/batch", body: `[{"location":"DE","requestedAt":"2022-06-01T12:00:00Z","requestedAt":"2022-06-02T12:00:00Z"}]`, param: "[0].requestedAt"},
		{url: "/casdk/emissions/forecasts/batch", body: `[{"location":"DE","requestedAt":"2022-06-01T12:00:00Z","windowSize":-1}]`, param: "[0].windowSize"},
		{url: "/casdk/emissions/forecasts/batch", body: `[{"location":"nowhere","requestedAt":"2022-06-01T12:00:00Z"}]`, param: "[0].location"},
	} {
		t.Run(tt.url+" "+tt.body, func(t *testing.T) {
			method := http.MethodGet
			if tt.body != "" {
				method = http.MethodPost
			}
			a := do(t, e, method, tt.url, "application/json", tt.body)
			p := decode[problem](t, a)
			if a.status != http.StatusBadRequest || p.Status != 400 || len(p.Errors[tt.param]) == 0 {
				t.Fatalf("status %d %s, want 400 naming %s", a.status, a.body, tt.param)
			}
		})
	}
}

// TestPrettyIgnored: a pretty query parameter changes nothing, answers and
// error documents alike. (Echo v4 indented any c.JSON answer to a request
// with one; the SDK's API has no such parameter, and Echo v5 dropped it.)
func TestPrettyIgnored(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, true)
	for url, status := range map[string]int{"/casdk/locations": 200, "/emissions/bylocation?location=DE&time=2022-05-01T10:00:00Z": 200,
		"/casdk/emissions/forecasts/current?location=DE&windowSize=x": 400} {
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		plain, pretty := do(t, e, http.MethodGet, url, "", ""), do(t, e, http.MethodGet, url+sep+"pretty", "", "")
		if plain.status != status || pretty.status != status || !bytes.Equal(plain.body, pretty.body) {
			t.Errorf("%s: %d %s\nwith pretty: %d %s", url, plain.status, plain.body, pretty.status, pretty.body)
		}
		if bytes.Contains(plain.body, []byte("\n ")) {
			t.Errorf("%s: indented answer %s", url, plain.body)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	t.Parallel()
	for p, ok := range map[string]bool{"": true, "/casdk": true, "/a/b": true, "casdk": false, "/casdk/": false, "/": false, "/a//b": false, "/a?b": false} {
		if err := CheckPrefix(p); (err == nil) != ok {
			t.Errorf("CheckPrefix(%q)=%v, want ok=%v", p, err, ok)
		}
	}
}

func TestOpenAPIPrefixesEveryRoute(t *testing.T) {
	t.Parallel()
	b, err := OpenAPI([]string{"/casdk", ""})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, prefix := range []string{"/casdk", ""} {
		for _, r := range routes {
			op, ok := doc.Paths[prefix+r.path][strings.ToLower(r.method)]
			if !ok {
				t.Errorf("%s %s%s is not documented", r.method, prefix, r.path)
				continue
			}
			if ids[op.OperationID] {
				t.Errorf("operationId %s twice", op.OperationID)
			}
			ids[op.OperationID] = true
		}
	}
	if len(doc.Paths) != 2*len(routes) {
		t.Errorf("%d paths documented, want %d", len(doc.Paths), 2*len(routes))
	}
}

// TestServerErrorsInTheSDKShape: an unknown path under the prefix (404),
// a route asked with another method (405), a malformed query escape (400
// naming the parameter) are the SDK's error document.
func TestServerErrorsInTheSDKShape(t *testing.T) {
	t.Parallel()
	e, _ := newTestAPI(t, true)
	for _, tt := range []struct {
		method, url string
		status      int
		param       string
	}{
		{http.MethodGet, "/casdk/nowhere", 404, ""},
		{http.MethodGet, "/casdk/emissions/bylocations/worst?location=DE", 404, ""},
		{http.MethodPost, "/casdk/locations", 405, ""},
		{http.MethodDelete, "/emissions/bylocation?location=DE", 405, ""},
		{http.MethodGet, "/casdk/emissions/forecasts/batch", 405, ""},
		{http.MethodGet, "/casdk/emissions/bylocation?location=DE&time=%zz", 400, "time"},
		{http.MethodGet, "/casdk/emissions/bylocations?location=DE&time=2022-05-01&toTime=%zz", 400, "toTime"},
		{http.MethodGet, "/casdk/emissions/average-carbon-intensity?location=DE&startTime=2022-05-01&endTime=2022-05-02&%zz=1", 400, "query"},
		{http.MethodGet, "/casdk/emissions/forecasts/current?location=DE;location=IE", 400, "location"},
	} {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			a := do(t, e, tt.method, tt.url, "", "")
			p := decode[problem](t, a)
			if a.status != tt.status || p.Status != tt.status || p.Title == "" || p.Detail == "" {
				t.Fatalf("status %d %s, want %d in the SDK's error document", a.status, a.body, tt.status)
			}
			if tt.param != "" && len(p.Errors[tt.param]) == 0 {
				t.Errorf("%s: errors do not name %s", a.body, tt.param)
			}
			if tt.status == 405 && a.header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
	// At the root, unknown paths are not the API's.
	if a := do(t, e, http.MethodGet, "/nowhere", "", ""); a.status != 404 || bytes.Contains(a.body, []byte(`"traceId"`)) || bytes.Contains(a.body, []byte(`"status":404`)) {
		t.Errorf("/nowhere: %d %s, want the server's own 404", a.status, a.body)
	}
}
