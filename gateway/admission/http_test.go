package admission

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/deploy/opa"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/wiring"
)

// replayStart is the frozen instant of the test gateway's replay clock:
// decisions do not move while a test runs.
var replayStart = time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)

// newGateway returns the embedded gateway over the bundled data with a
// replay clock that does not advance, stopped at replayStart.
func newGateway(t testing.TB) *wiring.Gateway { return newGatewayAt(t, replayStart) }

// newGatewayAt is newGateway with its clock stopped at start.
func newGatewayAt(t testing.TB, start time.Time) *wiring.Gateway {
	t.Helper()
	clk, err := clock.NewReplay(start, func() time.Time { return start })
	if err != nil {
		t.Fatal(err)
	}
	g, err := wiring.NewBundled(context.Background(), wiring.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// modeService emulates a carbongate that is down, slow or failing in
// front of the real service, and records the zones it is asked about.
// "error422" is the real service: the fixture's deadline is infeasible.
type modeService struct {
	*gateway.Service
	mode string // "", "up", "down", "slow", "error500", "error422"

	mu    sync.Mutex
	asked [][]forecast.Zone
	errs  []error
}

func (m *modeService) Schedule(ctx context.Context, req gateway.Request) (d gateway.Decision, err error) {
	m.mu.Lock()
	m.asked = append(m.asked, req.Zones)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.errs = append(m.errs, err)
		m.mu.Unlock()
	}()
	switch m.mode {
	case "down":
		return gateway.Decision{}, forecast.Errorf(forecast.EUNAVAILABLE, "connection refused")
	case "slow":
		<-ctx.Done()
		return gateway.Decision{}, ctx.Err()
	case "error500":
		return gateway.Decision{}, forecast.Errorf(forecast.EINTERNAL, "boom")
	}
	return m.Service.Schedule(ctx, req)
}

// calls returns the zones of each call, and the errors of the calls that
// returned.
func (m *modeService) calls() ([][]forecast.Zone, []error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.asked), slices.Clone(m.errs)
}

// serve returns a test server of the HTTP API with the webhook mounted,
// scheduling through s.
func serve(t testing.TB, g *wiring.Gateway, s Scheduler, data Data, failOpen bool) *httptest.Server {
	t.Helper()
	w, err := New(Config{Scheduler: s, Data: data, FailOpen: failOpen, Timeout: 200 * time.Millisecond, MaxBody: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{Service: g.Service, Metrics: prometheus.NewRegistry(), Mount: w.Register})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv
}

func postReview(t testing.TB, url, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

const validReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",
	"kind":{"group":"carbongate.io","version":"v1alpha1","kind":"VmTemplate"},
	"resource":{"group":"carbongate.io","version":"v1alpha1","resource":"vmtemplates"},
	"namespace":"jobs","operation":"CREATE",
	"object":{"apiVersion":"carbongate.io/v1alpha1","kind":"VmTemplate","metadata":{"name":"batch-1","namespace":"jobs"},
	  "spec":{"minCPU":4,"minRAM":"16Gi","duration":"PT3H","deadline":"2021-06-03T00:00:00Z","maxLatencyMs":0,"originRegion":"westeurope"}}}}`

// TestRouteMalformed: what is not an AdmissionReview v1 is an HTTP error
// with a message, never a 500 and never a review.
func TestRouteMalformed(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	srv := serve(t, g, g.Service, mustBundle(t), false)
	tests := []struct {
		name, contentType, body string
		status                  int
		want                    string
	}{
		{"empty", "application/json", "", 400, "empty request body"},
		{"not JSON", "application/json", "{", 400, "malformed AdmissionReview"},
		{"trailing data", "application/json", validReview + "{}", 400, "malformed AdmissionReview"},
		{"array", "application/json", "[]", 400, "malformed AdmissionReview"},
		{"wrong field type", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}`, 400, "request.uid"},
		{"v1beta1", "application/json", strings.Replace(validReview, "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), 400, "apiVersion"},
		{"wrong kind", "application/json", strings.Replace(validReview, `"kind":"AdmissionReview"`, `"kind":"Review"`, 1), 400, "kind"},
		{"no request", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "no request"},
		{"no uid", "application/json", strings.Replace(validReview, `"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",`, "", 1), 400, "no uid"},
		{"uid given twice", "application/json", strings.Replace(validReview, `"uid":"705ab4f5-6393-11e8-b7cc-42010a800002",`, `"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","uid":"other",`, 1), 400, `"request.uid" is given twice`},
		{"not JSON content", "text/plain", validReview, 415, "application/json"},
		{"too large", "application/json", strings.Replace(validReview, `"jobs"`, `"`+strings.Repeat("j", 70<<10)+`"`, 1), 413, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, body := postReview(t, srv.URL, tt.contentType, tt.body)
			var e struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if status != tt.status || !strings.Contains(e.Error.Message, tt.want) {
				t.Fatalf("%d %s, want %d with %q", status, body, tt.status, tt.want)
			}
		})
	}
}

// TestRouteSchedules: a CREATE through the route with the real gateway:
// the response is an AdmissionReview v1 with the uid, a base64 JSONPatch
// and the HTTP request id in the provenance.
func TestRouteSchedules(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	srv := serve(t, g, g.Service, mustBundle(t), false)
	status, body := postReview(t, srv.URL, "application/json", validReview)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["request"]; ok {
		t.Fatalf("the response echoes the request: %s", body)
	}
	rv := decodeResponse(t, body)
	if rv.APIVersion != "admission.k8s.io/v1" || rv.Kind != "AdmissionReview" || rv.Response.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" ||
		!rv.Response.Allowed || rv.Response.PatchType != "JSONPatch" {
		t.Fatalf("%s", body)
	}
	var ops []op
	if err := json.Unmarshal(rv.Response.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	d, err := g.Service.Schedule(context.Background(), gateway.Request{Zones: []forecast.Zone{"NL"}, Duration: 3 * time.Hour,
		Deadline: time.Date(2021, 6, 3, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 6 || ops[0].Path != "/spec/provider" || ops[1].Value != "westeurope" || ops[2].Value != stamp(d.Decision.Start) || ops[3].Path != "/spec/instanceType" {
		t.Fatalf("patch %s, want westeurope at %s", rv.Response.Patch, stamp(d.Decision.Start))
	}
	var p v1alpha1.Provenance
	if err := json.Unmarshal([]byte(ops[5].Value.(string)), &p); err != nil || p.Zone != "NL" || p.RequestID == "" || p.Sources["NL"] == "" {
		t.Fatalf("provenance %v: %v", ops[5].Value, err)
	}
}

type reviewJSON struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		UID       string   `json:"uid"`
		Allowed   bool     `json:"allowed"`
		Patch     []byte   `json:"patch"` // base64 on the wire
		PatchType string   `json:"patchType"`
		Warnings  []string `json:"warnings"`
		Status    *struct {
			Status  string `json:"status"`
			Code    int    `json:"code"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"response"`
}

func decodeResponse(t testing.TB, body []byte) reviewJSON {
	t.Helper()
	var rv reviewJSON
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatalf("response %s: %v", body, err)
	}
	return rv
}

func mustBundle(t testing.TB) Data {
	t.Helper()
	d, err := Bundle(opa.Admission{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
