package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/deploy/opa"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/wiring"
	"github.com/carbongate/carbongate/test/testsupport"
)

// fixturesDir holds the admission cases shared with the OPA bundle's tests.
var fixturesDir = filepath.Join("..", "..", "test", "fixtures", "admission")

// fixture is want.json of a case (format: the fixtures' README).
type fixture struct {
	Note            string                   `json:"note"`
	Allowed         bool                     `json:"allowed"`
	Code            int                      `json:"code"`
	MessageContains string                   `json:"message_contains"`
	Patch           []map[string]any         `json:"patch"`
	EligibleZones   []forecast.Zone          `json:"eligible_zones"`
	Representatives map[forecast.Zone]string `json:"representatives"`
	Carbongate      string                   `json:"carbongate"` // "" (up), up, down, slow, error500, error422
	FailOpen        bool                     `json:"fail_open"`
}

// Placeholders of want.json patch values.
const (
	phRegion     = "$decision.region"
	phStart      = "$decision.start"
	phProvenance = "$provenance"
	phWhy        = "$why"
)

// TestFixtures runs every case of test/fixtures/admission through POST
// /v1/admission/mutate with the real gateway (behind a wrapper that
// emulates the case's carbongate mode) and checks the answer field by
// field. Placeholders in the expected patch are resolved from the
// gateway's own answer for eligible_zones.
func TestFixtures(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join(fixturesDir, "*", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no cases in %s", fixturesDir)
	}
	g := newGateway(t)
	data := mustBundle(t)
	for _, review := range dirs {
		dir := filepath.Dir(review)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			runFixture(t, g, data, dir)
		})
	}
}

// fixtureCase is a loaded case.
type fixtureCase struct {
	review []byte
	uid    string
	object json.RawMessage
	want   fixture
}

func loadCase(t *testing.T, dir string) fixtureCase {
	t.Helper()
	var c fixtureCase
	var err error
	if c.review, err = os.ReadFile(filepath.Join(dir, "review.json")); err != nil {
		t.Fatal(err)
	}
	var in struct {
		Request struct {
			UID    string          `json:"uid"`
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(c.review, &in); err != nil {
		t.Fatalf("review.json: %v", err)
	}
	c.uid, c.object = in.Request.UID, in.Request.Object
	wb, err := os.ReadFile(filepath.Join(dir, "want.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(wb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.want); err != nil {
		t.Fatalf("want.json: %v", err)
	}
	if !slices.Contains([]string{"", "up", "down", "slow", "error500", "error422"}, c.want.Carbongate) {
		t.Fatalf("want.json: unknown carbongate mode %q", c.want.Carbongate)
	}
	return c
}

func runFixture(t *testing.T, g *wiring.Gateway, data Data, dir string) {
	c := loadCase(t, dir)
	ms := &modeService{Service: g.Service, mode: c.want.Carbongate}
	srv := serve(t, g, ms, data, c.want.FailOpen)
	status, out := postReview(t, srv.URL, "application/json", string(c.review))
	if status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	rv := decodeResponse(t, out)
	r := rv.Response
	if rv.APIVersion != "admission.k8s.io/v1" || rv.Kind != "AdmissionReview" {
		t.Errorf("apiVersion %q kind %q", rv.APIVersion, rv.Kind)
	}
	if r.UID != c.uid {
		t.Errorf("uid %q, want %q", r.UID, c.uid)
	}
	if r.Allowed != c.want.Allowed {
		t.Fatalf("allowed %v, want %v (status %+v)", r.Allowed, c.want.Allowed, r.Status)
	}
	code, msg := 0, ""
	if r.Status != nil {
		code, msg = r.Status.Code, r.Status.Message
	}
	if code != c.want.Code {
		t.Errorf("code %d, want %d (message %q)", code, c.want.Code, msg)
	}
	if !r.Allowed && (r.Status == nil || r.Status.Status != "Failure" || r.Status.Reason != string(reasonOf(int32(c.want.Code)))) {
		t.Errorf("status %+v, want Failure with the reason of %d", r.Status, c.want.Code)
	}
	if !strings.Contains(msg, c.want.MessageContains) {
		t.Errorf("message %q does not contain %q", msg, c.want.MessageContains)
	}
	checkAsked(t, ms, c.want)
	var ph *placeholders
	if len(c.want.EligibleZones) > 0 && (c.want.Carbongate == "" || c.want.Carbongate == "up") {
		ph = resolve(t, g, c)
	}
	checkPatch(t, c, r.Patch, r.PatchType, msg, ph)
}

// checkAsked checks that carbongate was asked about eligible_zones (and
// only then), and that an "error422" case is infeasible for the real
// gateway.
func checkAsked(t *testing.T, ms *modeService, want fixture) {
	t.Helper()
	asked, errs := ms.calls()
	if len(want.EligibleZones) == 0 {
		if len(asked) > 0 {
			t.Errorf("carbongate asked about %v, want no call", asked)
		}
		return
	}
	if len(asked) != 1 || !slices.Equal(asked[0], want.EligibleZones) {
		t.Fatalf("carbongate asked about %v, want once about %v", asked, want.EligibleZones)
	}
	if want.Carbongate == "error422" && (len(errs) != 1 || forecast.ErrorCode(errs[0]) != forecast.EINFEASIBLE) {
		t.Fatalf("the gateway answered %v, want EINFEASIBLE (the fixture's deadline must be infeasible)", errs)
	}
}

// checkPatch compares the patch op by op: op, path and value, with the
// placeholders resolved and the provenance annotation compared as JSON,
// and applies it to the object.
func checkPatch(t *testing.T, c fixtureCase, patch []byte, patchType, message string, ph *placeholders) {
	t.Helper()
	if len(c.want.Patch) == 0 {
		if patch != nil || patchType != "" {
			t.Errorf("patch %s (type %q), want none", patch, patchType)
		}
		return
	}
	if patchType != "JSONPatch" {
		t.Errorf("patchType %q, want JSONPatch", patchType)
	}
	var got []map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	if len(got) != len(c.want.Patch) {
		t.Fatalf("%d ops, want %d:\n got %s\nwant %s", len(got), len(c.want.Patch), patch, mustMarshal(t, c.want.Patch))
	}
	for i, w := range c.want.Patch {
		if got[i]["op"] != w["op"] || got[i]["path"] != w["path"] {
			t.Errorf("op %d: %v %v, want %v %v", i, got[i]["op"], got[i]["path"], w["op"], w["path"])
			continue
		}
		if err := checkValue(t, got[i]["value"], w["value"], message, ph); err != "" {
			t.Errorf("op %d (%v): %s", i, w["path"], err)
		}
	}
	if _, err := testsupport.ApplyPatch(c.object, got); err != nil {
		t.Errorf("the patch does not apply to the object: %v", err)
	}
}

// checkValue compares a patch value with want's, resolving placeholders;
// it returns what differs.
func checkValue(t *testing.T, got, want any, message string, ph *placeholders) string {
	t.Helper()
	switch want {
	case phRegion, phStart, phProvenance:
		if ph == nil {
			return fmt.Sprintf("placeholder %s, but the case asks carbongate for no decision", want)
		}
	}
	switch want {
	case phRegion:
		want = ph.region
	case phStart:
		want = ph.start
	case phWhy:
		if why, _ := got.(string); why == "" || message != "carbongate unavailable: "+why {
			return fmt.Sprintf("%#v: want a reason, with the status message %q being \"carbongate unavailable: \" + it", got, message)
		}
		return ""
	case phProvenance:
		return checkProvenance(got, ph.provenance)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("value %#v, want %#v", got, want)
	}
	return ""
}

// checkProvenance compares the annotation with the expected one; the
// request id is the webhook request's own, so only its presence is checked.
func checkProvenance(got any, want map[string]any) string {
	s, ok := got.(string)
	if !ok {
		return fmt.Sprintf("provenance %#v is not a string", got)
	}
	var g map[string]any
	if err := json.Unmarshal([]byte(s), &g); err != nil {
		return fmt.Sprintf("provenance %q: %v", s, err)
	}
	if id, _ := g["request_id"].(string); id == "" {
		return fmt.Sprintf("provenance %s has no request_id", s)
	}
	delete(g, "request_id")
	if !reflect.DeepEqual(g, want) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(want)
		return fmt.Sprintf("provenance\n got %s\nwant %s", gb, wb)
	}
	return ""
}

// placeholders are the values of "$decision.region", "$decision.start" and
// "$provenance" (without request_id).
type placeholders struct {
	region, start string
	provenance    map[string]any
}

// resolve asks the gateway what POST /v1/schedule answers for the case's
// eligible_zones with the object's duration and deadline (the replay clock
// is frozen: the same answer the webhook got), and maps the decision back
// to its region with the case's representatives, which it checks against
// the bundle's files.
func resolve(t *testing.T, g *wiring.Gateway, c fixtureCase) *placeholders {
	t.Helper()
	var obj struct {
		Spec struct {
			Duration     string  `json:"duration"`
			Deadline     string  `json:"deadline"`
			MaxLatencyMs float64 `json:"maxLatencyMs"`
			OriginRegion string  `json:"originRegion"`
			Provider     string  `json:"provider"`
			Residency    string  `json:"residency"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(c.object, &obj); err != nil {
		t.Fatal(err)
	}
	s := obj.Spec
	req := map[string]any{"zones": c.want.EligibleZones, "duration": s.Duration}
	if s.Deadline != "" {
		req["deadline"] = s.Deadline
	}
	r, err := httpapi.DecodeScheduleRequest(mustMarshal(t, req))
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.Service.Schedule(context.Background(), r)
	if err != nil {
		t.Fatalf("schedule %v: %v", c.want.EligibleZones, err)
	}
	for _, z := range c.want.EligibleZones {
		if got, want := c.want.Representatives[z], representative(t, s.Provider, s.OriginRegion, s.MaxLatencyMs, s.Residency == "EU", z); got != want {
			t.Errorf("want.json: representative of %s is %q; the bundle's data says %q", z, got, want)
		}
	}
	region := c.want.Representatives[d.Decision.Zone]
	if region == "" {
		t.Fatalf("the gateway chose %s; want.json has no representative for it", d.Decision.Zone)
	}
	return &placeholders{region: region, start: stamp(d.Decision.Start), provenance: expectedProvenance(t, d, region)}
}

func expectedProvenance(t *testing.T, d gateway.Decision, region string) map[string]any {
	t.Helper()
	sources := map[string]any{}
	for z, p := range d.Provenance {
		sources[string(z)] = string(p.Source)
	}
	var savings any
	if d.SavingsPct != nil {
		savings = *d.SavingsPct
	}
	// Numbers go through JSON, as in the annotation.
	var out map[string]any
	if err := json.Unmarshal(mustMarshal(t, map[string]any{
		"zone": string(d.Decision.Zone), "region": region, "start": stamp(d.Decision.Start), "end": stamp(d.Decision.End),
		"mean_intensity": d.Decision.Mean, "savings_pct": savings, "sources": sources,
	}), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// representative is the region of provider that stands for zone: read
// straight from the bundle's files, not through Data.
func representative(t *testing.T, provider, origin string, maxMs float64, eu bool, zone forecast.Zone) string {
	t.Helper()
	if provider == "" {
		provider = DefaultProvider
	}
	rs, err := opa.LoadRegions(provider)
	if err != nil {
		t.Fatal(err)
	}
	res, err := opa.LoadResidency()
	if err != nil {
		t.Fatal(err)
	}
	lat, hasLatency, err := opa.LoadLatency(provider)
	if err != nil {
		t.Fatal(err)
	}
	best, bestRTT := "", 0.0
	for name, r := range rs.Regions {
		if r.Zone != string(zone) {
			continue
		}
		if _, in := res.Regions[provider][name]; eu && !in {
			continue
		}
		rtt, ok := 0.0, name == origin
		if !ok && hasLatency {
			rtt, ok = lat.RTT[origin][name]
		}
		if !ok || rtt > maxMs {
			continue
		}
		if best == "" || rtt < bestRTT || (rtt == bestRTT && name < best) {
			best, bestRTT = name, rtt
		}
	}
	if best == "" {
		t.Fatalf("no region of %s in zone %s qualifies", provider, zone)
	}
	return best
}
