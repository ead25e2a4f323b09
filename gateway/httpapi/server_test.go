package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/wiring"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

var testNow = time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
func (c fixedClock) Mode() string   { return "replay" }

// newTestServer serves the embedded gateway (bundled data, no trained
// models) on a loopback httptest server.
func newTestServer(tb testing.TB) (*Server, *httptest.Server) {
	tb.Helper()
	return newTestServerWith(tb, nil)
}

// newTestServerWith is newTestServer with the Config changed by set.
func newTestServerWith(tb testing.TB, set func(*Config)) (*Server, *httptest.Server) {
	tb.Helper()
	reg := prometheus.NewRegistry()
	g, err := wiring.NewBundled(context.Background(), wiring.Config{Clock: fixedClock{testNow}, Registerer: reg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() })
	cfg := Config{Service: g.Service, Metrics: reg}
	if set != nil {
		set(&cfg)
	}
	apiSrv, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(apiSrv)
	tb.Cleanup(ts.Close)
	return apiSrv, ts
}

func do(t *testing.T, method, url, ctype string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

const acceptance = `{"zones":["DE","SE","PL","ES"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z"}`

func TestScheduleOverHTTP(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json; charset=utf-8", []byte(acceptance), "X-Request-Id", "abc-123")
	if resp.StatusCode != 200 {
		t.Fatalf("status=%d body=%s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Fatalf("X-Request-Id=%q, want the caller's", got)
	}
	var r struct {
		Decision struct {
			Zone  string    `json:"zone"`
			Start time.Time `json:"start"`
		} `json:"decision"`
		Alternatives []json.RawMessage          `json:"alternatives"`
		Provenance   map[string]api.Provenance  `json:"provenance"`
		Clock        api.Clock                  `json:"clock"`
		RequestID    string                     `json:"request_id"`
		Unit         string                     `json:"unit"`
		Extra        map[string]json.RawMessage `json:"-"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Clock.Mode != "replay" || !r.Clock.Now.Equal(testNow) || r.RequestID != "abc-123" || r.Unit != "gCO2eq/kWh" {
		t.Fatalf("clock=%+v request_id=%q unit=%q", r.Clock, r.RequestID, r.Unit)
	}
	if len(r.Alternatives) != 4 || len(r.Provenance) != 4 || r.Provenance["DE"].Source != "baseline" {
		t.Fatalf("alternatives=%d provenance=%+v", len(r.Alternatives), r.Provenance)
	}
	if !strings.HasSuffix(string(body), "\n") || strings.Contains(string(body), "+00:00") {
		t.Fatalf("times must be RFC 3339 UTC: %s", body)
	}
	// A generated request id when none is given.
	resp, _ = do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(acceptance))
	if id := resp.Header.Get("X-Request-Id"); len(id) < 16 {
		t.Fatalf("generated X-Request-Id=%q", id)
	}
}

func TestBadInputOverHTTP(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	big := `{"zones":["DE"],"duration":"1h","origin":"` + strings.Repeat("A", MaxBodyBytes) + `"}`
	many := make([]string, 257)
	for i := range many {
		many[i] = `"DE"`
	}
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		code, field                     string
	}{
		{"unknown field", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","colour":"green"}`, 400, "invalid", "colour"},
		{"malformed JSON", "POST", "/v1/schedule", "application/json", `{"zones":`, 400, "invalid", "body"},
		{"malformed time", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","earliest_start":"June 1st"}`, 400, "invalid", "earliest_start"},
		{"malformed duration", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"PT3X"}`, 400, "invalid", "duration"},
		{"unknown zone", "POST", "/v1/schedule", "application/json", `{"zones":["DE","ATLANTIS"],"duration":"1h"}`, 400, "invalid", "zones"},
		{"unknown region", "POST", "/v1/schedule", "application/json", `{"locations":[{"provider":"aws","region":"moon-1"}],"duration":"1h"}`, 400, "invalid", "locations"},
		{"unknown provider", "POST", "/v1/schedule", "application/json", `{"locations":[{"provider":"ibm","region":"us-south"}],"duration":"1h"}`, 400, "invalid", "locations"},
		{"unknown signal", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","signal":"marginal"}`, 400, "invalid", "signal"},
		{"zero duration", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"PT0S"}`, 400, "invalid", "duration"},
		{"duration over the horizon", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"P5D"}`, 400, "invalid", "duration"},
		{"deadline before earliest start + duration", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"3h","deadline":"2021-06-01T02:00:00Z"}`, 422, "infeasible", "deadline"},
		{"deadline before earliest start + duration, both given", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"3h","earliest_start":"2021-06-01T05:00:00Z","deadline":"2021-06-01T07:00:00Z"}`, 422, "infeasible", "deadline"},
		{"empty candidate list", "POST", "/v1/schedule", "application/json", `{"zones":[],"duration":"1h"}`, 400, "invalid", "zones"},
		{"too many candidates", "POST", "/v1/schedule", "application/json", `{"zones":[` + strings.Join(many, ",") + `],"duration":"1h"}`, 400, "invalid", "zones"},
		{"oversized body", "POST", "/v1/schedule", "application/json", big, 413, "too_large", ""},
		{"wrong content type", "POST", "/v1/schedule", "text/plain", acceptance, 415, "unsupported_media_type", ""},
		{"no content type", "POST", "/v1/schedule", "", acceptance, 415, "unsupported_media_type", ""},
		{"wrong method", "GET", "/v1/schedule", "", "", 405, "method_not_allowed", ""},
		{"no route", "GET", "/v2/schedule", "", "", 404, "not_found", ""},
		{"negative power", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","power_watts":-5}`, 400, "invalid", "power_watts"},
		{"absurd power", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","power_watts":1e9}`, 400, "invalid", "power_watts"},
		{"power as a string", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","power_watts":"100W"}`, 400, "invalid", "power_watts"},
		{"unknown instance type", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","instance_type":"m99.huge"}`, 400, "invalid", "instance_type"},
		{"utilization in percent", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","instance_type":"m5.large","utilization":50}`, 400, "invalid", "utilization"},
		{"two power sources", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","power_watts":100,"vcpus":2}`, 400, "invalid", "vcpus"},
		{"embodied without instance type", "POST", "/v1/schedule", "application/json", `{"zones":["DE"],"duration":"1h","power_watts":100,"include_embodied":true}`, 400, "invalid", "include_embodied"},
		{"forecast without zone", "GET", "/v1/forecast", "", "", 400, "invalid", "zone"},
		{"forecast unknown zone", "GET", "/v1/forecast?zone=ATLANTIS", "", "", 400, "invalid", "zone"},
		{"forecast unknown signal", "GET", "/v1/forecast?zone=DE&signal=marginal", "", "", 400, "invalid", "signal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, tt.method, ts.URL+tt.path, tt.ctype, []byte(tt.body))
			if resp.StatusCode != tt.status {
				t.Fatalf("status=%d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			var e api.ErrorBody
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("error body %s: %v", body, err)
			}
			if e.Error.Code != tt.code || e.Error.Field != tt.field || e.Error.Message == "" {
				t.Fatalf("error=%+v, want code %q field %q", e.Error, tt.code, tt.field)
			}
			if e.RequestID == "" || e.RequestID != resp.Header.Get("X-Request-Id") {
				t.Fatalf("request_id=%q, header %q", e.RequestID, resp.Header.Get("X-Request-Id"))
			}
			if tt.status == 400 && tt.field == "colour" && !strings.Contains(e.Error.Message, "colour") {
				t.Fatalf("message %q does not name the unknown field", e.Error.Message)
			}
		})
	}
}

func TestUnknownRegionNamed(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	_, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json",
		[]byte(`{"locations":[{"provider":"aws","region":"moon-1"},{"provider":"gcp","region":"mars-2"},{"provider":"aws","region":"eu-central-1"}],"duration":"1h"}`))
	for _, want := range []string{"aws/moon-1", "gcp/mars-2"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("body %s does not name %s", body, want)
		}
	}
}

func TestProbesAndMetrics(t *testing.T) {
	t.Parallel()
	apiSrv, ts := newTestServer(t)
	for _, p := range []string{"/healthz", "/readyz", "/v1/zones", "/v1/forecast?zone=DE", "/openapi.json"} {
		if resp, body := do(t, "GET", ts.URL+p, "", nil); resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, body)
		}
	}
	do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(acceptance))
	_, body := do(t, "GET", ts.URL+"/metrics", "", nil)
	for _, want := range []string{
		`carbongate_http_requests_total{code="200",route="/v1/schedule"} 1`,
		`carbongate_http_request_duration_seconds_bucket{route="/v1/schedule"`,
		`carbongate_decision_forecast_sources_total{source="baseline"} 4`,
		`carbongate_forecast_cache_hits_total`,
		`carbongate_forecasts_total{source="baseline"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
	apiSrv.Drain()
	if resp, _ := do(t, "GET", ts.URL+"/readyz", "", nil); resp.StatusCode != 503 {
		t.Fatalf("readyz while draining: %d, want 503", resp.StatusCode)
	}
	if resp, _ := do(t, "GET", ts.URL+"/healthz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("healthz while draining: %d, want 200", resp.StatusCode)
	}
}

// ---- OpenAPI --------------------------------------------------------------

type spec struct {
	Paths      map[string]map[string]any `json:"paths"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	var s spec
	if err := json.Unmarshal(OpenAPI(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	apiSrv, _ := newTestServer(t)
	s := loadSpec(t)
	routes := apiSrv.Routes()
	for _, r := range routes {
		method, path, _ := strings.Cut(r, " ")
		ops, ok := s.Paths[path]
		if !ok {
			t.Errorf("route %s is not in the OpenAPI paths", r)
			continue
		}
		if _, ok := ops[strings.ToLower(method)]; !ok {
			t.Errorf("route %s: method not in the OpenAPI document", r)
		}
	}
	for path, ops := range s.Paths {
		for m := range ops {
			if !slices.Contains(routes, strings.ToUpper(m)+" "+path) {
				t.Errorf("OpenAPI declares %s %s, which is not registered", m, path)
			}
		}
	}
}

func TestResponsesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	s := loadSpec(t)
	tests := []struct {
		method, path, body, schema string
		status                     int
	}{
		{"POST", "/v1/schedule", acceptance, "ScheduleResponse", 200},
		{"POST", "/v1/schedule", `{"locations":[{"provider":"aws","region":"eu-central-1"}],"zones":["FR"],"duration":"PT90M","origin":"SE"}`, "ScheduleResponse", 200},
		{"POST", "/v1/schedule", `{"zones":["DE","SE"],"duration":"PT3H","instance_type":"m5.large","include_embodied":true}`, "ScheduleResponse", 200},
		{"POST", "/v1/schedule", `{"zones":["DE","SE"],"duration":"PT3H","power_watts":150}`, "ScheduleResponse", 200},
		{"POST", "/v1/schedule", `{"zones":["DE"],"duration":"3h","deadline":"2021-06-01T01:00:00Z"}`, "ErrorResponse", 422},
		{"POST", "/v1/schedule", `{"zones":["DE"],"bogus":1}`, "ErrorResponse", 400},
		{"GET", "/v1/forecast?zone=SE&signal=direct", "", "ForecastResponse", 200},
		{"GET", "/v1/zones", "", "ZonesResponse", 200},
		{"GET", "/v1/instance-types?provider=azure&min_cpu=2&min_ram=16Gi", "", "InstanceTypesResponse", 200},
		{"GET", "/v1/instance-types?provider=aws&min_cpu=4&min_ram=8&gpu=true&alternatives=0", "", "InstanceTypesResponse", 200},
		{"GET", "/v1/instance-types?provider=aws&min_cpu=60000&min_ram=1", "", "ErrorResponse", 422},
		{"GET", "/healthz", "", "Status", 200},
		{"GET", "/readyz", "", "Status", 200},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path+fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, tt.method, ts.URL+tt.path, "application/json", []byte(tt.body))
			if resp.StatusCode != tt.status {
				t.Fatalf("status=%d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatal(err)
			}
			if err := validate(s, map[string]any{"$ref": "#/components/schemas/" + tt.schema}, v, "$"); err != nil {
				t.Fatalf("%v\n%s", err, body)
			}
		})
	}
}

// validate checks v against the subset of JSON Schema the document uses:
// $ref, type, required, properties, additionalProperties, items, enum,
// const.
func validate(s spec, schema map[string]any, v any, at string) error {
	if ref, ok := schema["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		sub, ok := s.Components.Schemas[name].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: unresolved $ref %s", at, ref)
		}
		return validate(s, sub, v, at)
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v not in enum %v", at, v, enum)
	}
	if c, ok := schema["const"]; ok && c != v {
		return fmt.Errorf("%s: %v, want const %v", at, v, c)
	}
	switch schema["type"] {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want object", at, v)
		}
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: required field %q missing", at, r)
			}
		}
		props, _ := schema["properties"].(map[string]any)
		for k, fv := range obj {
			if ps, ok := props[k].(map[string]any); ok {
				if err := validate(s, ps, fv, at+"."+k); err != nil {
					return err
				}
			} else if ap, ok := schema["additionalProperties"].(map[string]any); ok {
				if err := validate(s, ap, fv, at+"."+k); err != nil {
					return err
				}
			} else if props != nil {
				return fmt.Errorf("%s: field %q is not declared", at, k)
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want array", at, v)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range arr {
				if err := validate(s, items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %T, want string", at, v)
		}
		if schema["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil || !strings.HasSuffix(str, "Z") {
				return fmt.Errorf("%s: %q is not an RFC 3339 UTC time", at, str)
			}
		}
	case "number":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%s: %T, want number", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want boolean", at, v)
		}
	}
	return nil
}

// TestQueryParameterGivenTwice: the single-valued query parameters of
// /v1/forecast and /v1/instance-types given twice are 400 naming them,
// not the first value.
func TestQueryParameterGivenTwice(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for url, field := range map[string]string{
		"/v1/forecast?zone=DE&zone=SE":                         "zone",
		"/v1/forecast?zone=DE&signal=direct&signal=marginal":   "signal",
		"/v1/instance-types?provider=aws&min_cpu=2&min_cpu=64": "min_cpu",
	} {
		resp, body := do(t, "GET", ts.URL+url, "", nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", url, resp.StatusCode, body, field)
		}
	}
}
