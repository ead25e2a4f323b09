//go:build interop

package opa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// fixture is one case of test/fixtures/admission (format in its README).
type fixture struct {
	name   string
	review []byte // review.json as is
	req    struct {
		UID    string          `json:"uid"`
		Object json.RawMessage `json:"object"`
	}
	want want
}

// want is want.json.
type want struct {
	Note            string            `json:"note"`
	Allowed         bool              `json:"allowed"`
	Code            int32             `json:"code"`
	MessageContains string            `json:"message_contains"`
	Patch           []op              `json:"patch"`
	EligibleZones   []string          `json:"eligible_zones"`
	Representatives map[string]string `json:"representatives"`
	Carbongate      string            `json:"carbongate"` // up (""), down, slow, error500, error422
	FailOpen        bool              `json:"fail_open"`
}

// op is one JSONPatch operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Placeholders of want.json patch values.
const (
	phRegion     = "$decision.region"
	phStart      = "$decision.start"
	phProvenance = "$provenance"
	phWhy        = "$why"
)

var modes = []string{"up", "down", "slow", "error500", "error422"}

func loadFixtures(tb testing.TB) []fixture {
	tb.Helper()
	root := filepath.Join(services.RepoRoot(tb), "test", "fixtures", "admission")
	dirs, err := os.ReadDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	var fs []fixture
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		f := fixture{name: d.Name()}
		if f.review, err = os.ReadFile(filepath.Join(root, d.Name(), "review.json")); err != nil {
			tb.Fatal(err)
		}
		var rv struct {
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(f.review, &rv); err != nil {
			tb.Fatalf("%s/review.json: %v", d.Name(), err)
		}
		if err := json.Unmarshal(rv.Request, &f.req); err != nil {
			tb.Fatalf("%s/review.json request: %v", d.Name(), err)
		}
		w, err := os.ReadFile(filepath.Join(root, d.Name(), "want.json"))
		if err != nil {
			tb.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(w))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f.want); err != nil {
			tb.Fatalf("%s/want.json: %v", d.Name(), err)
		}
		if f.want.Carbongate == "" {
			f.want.Carbongate = "up"
		}
		if !slices.Contains(modes, f.want.Carbongate) {
			tb.Fatalf("%s/want.json: carbongate %q, want one of %v", d.Name(), f.want.Carbongate, modes)
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		tb.Fatalf("no fixtures in %s", root)
	}
	return fs
}

// scheduleBody is the /v1/schedule body the policy must send for f.
func (f fixture) scheduleBody(tb testing.TB) []byte {
	tb.Helper()
	var obj struct {
		Spec struct {
			Duration string `json:"duration"`
			Deadline string `json:"deadline"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(f.req.Object, &obj); err != nil {
		tb.Fatalf("object: %v", err)
	}
	body := map[string]any{"zones": f.want.EligibleZones, "duration": obj.Spec.Duration}
	if obj.Spec.Deadline != "" {
		body["deadline"] = obj.Spec.Deadline
	}
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// scheduleAnswer is the part of a /v1/schedule answer the patch uses.
type scheduleAnswer struct {
	Decision struct {
		Zone          string      `json:"zone"`
		Start         string      `json:"start"`
		End           string      `json:"end"`
		MeanIntensity json.Number `json:"mean_intensity"`
	} `json:"decision"`
	SavingsPct *json.Number                       `json:"savings_pct"`
	Provenance map[string]struct{ Source string } `json:"provenance"`
	RequestID  string                             `json:"request_id"`
}

// check compares the AdmissionReview OPA answered for f with want.json;
// answer is carbongate's answer to the fixture's /v1/schedule call (nil
// when the fixture needs none).
func (f fixture) check(t *testing.T, raw []byte, answer *scheduleAnswer) {
	t.Helper()
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("answer is not an AdmissionReview: %v\n%s", err, raw)
	}
	r := got.Response
	if got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" || r == nil {
		t.Fatalf("answer: apiVersion %q, kind %q, response %v; want an admission.k8s.io/v1 AdmissionReview with a response\n%s", got.APIVersion, got.Kind, r, raw)
	}
	if got, want := string(r.UID), f.req.UID; got != want {
		t.Errorf("response.uid = %q, want %q", got, want)
	}
	if got, want := r.Allowed, f.want.Allowed; got != want {
		t.Fatalf("response.allowed = %v, want %v\n%s", got, want, raw)
	}
	var message string
	if r.Result != nil {
		message = r.Result.Message
	}
	if !r.Allowed {
		if r.Result == nil {
			t.Fatalf("denied without a status\n%s", raw)
		}
		if got, want := r.Result.Code, f.want.Code; got != want {
			t.Errorf("response.status.code = %d, want %d (message %q)", got, want, message)
		}
		if got, want := r.Result.Status, "Failure"; got != want {
			t.Errorf("response.status.status = %q, want %q", got, want)
		}
		if got, want := string(r.Result.Reason), reasonOf(f.want.Code); got != want {
			t.Errorf("response.status.reason = %q, want %q", got, want)
		}
	} else if f.want.Code != 0 {
		t.Errorf("want.json: code %d for an allowed review", f.want.Code)
	}
	if !strings.Contains(message, f.want.MessageContains) {
		t.Errorf("response.status.message = %q, want it to contain %q", message, f.want.MessageContains)
	}
	f.checkPatch(t, r, message, answer)
}

func reasonOf(code int32) string {
	switch code {
	case 400:
		return "BadRequest"
	case 403:
		return "Forbidden"
	case 503:
		return "ServiceUnavailable"
	}
	return "InternalError"
}

func (f fixture) checkPatch(t *testing.T, r *admissionv1.AdmissionResponse, message string, answer *scheduleAnswer) {
	t.Helper()
	if len(f.want.Patch) == 0 {
		if len(r.Patch) != 0 || r.PatchType != nil {
			t.Errorf("response has a patch (%s), want none", r.Patch)
		}
		return
	}
	if r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Errorf("response.patchType = %v, want JSONPatch", r.PatchType)
	}
	var ops []op
	if err := json.Unmarshal(r.Patch, &ops); err != nil {
		t.Fatalf("response.patch is not a JSONPatch: %v\n%s", err, r.Patch)
	}
	if len(ops) != len(f.want.Patch) {
		t.Fatalf("patch has %d ops, want %d:\n got %s\nwant %s", len(ops), len(f.want.Patch), r.Patch, mustJSON(f.want.Patch))
	}
	for i, w := range f.want.Patch {
		g := ops[i]
		if g.Op != w.Op || g.Path != w.Path {
			t.Errorf("patch[%d] = %s %s, want %s %s", i, g.Op, g.Path, w.Op, w.Path)
			continue
		}
		if err := f.checkValue(g.Value, w.Value, message, answer); err != nil {
			t.Errorf("patch[%d] %s: %v", i, g.Path, err)
		}
	}
	if _, err := testsupport.ApplyPatch(f.req.Object, ops); err != nil {
		t.Errorf("the patch does not apply to request.object: %v", err)
	}
}

// checkValue compares a patch value with want's, resolving placeholders.
func (f fixture) checkValue(got, want any, message string, answer *scheduleAnswer) error {
	ph, _ := want.(string)
	needAnswer := ph == phRegion || ph == phStart || ph == phProvenance
	if needAnswer && answer == nil {
		return fmt.Errorf("placeholder %s, but carbongate gave no decision for this fixture", ph)
	}
	switch ph {
	case phRegion:
		return equal(got, f.want.Representatives[answer.Decision.Zone])
	case phStart:
		return equal(got, answer.Decision.Start)
	case phWhy:
		why, ok := got.(string)
		if !ok || why == "" || message != "carbongate unavailable: "+why {
			return fmt.Errorf("%#v: want a non-empty reason, with the status message %q being \"carbongate unavailable: \" + it", got, message)
		}
		return nil
	case phProvenance:
		s, ok := got.(string)
		if !ok {
			return fmt.Errorf("%#v is not a string", got)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			return fmt.Errorf("%q is not JSON: %v", s, err)
		}
		if id, _ := p["request_id"].(string); id == "" {
			return fmt.Errorf("provenance %s has no request_id", s)
		}
		return equal(p, f.provenance(answer, p["request_id"]))
	}
	return equal(got, want)
}

// provenance is the annotation value want.json's $provenance stands for.
func (f fixture) provenance(a *scheduleAnswer, requestID any) map[string]any {
	sources := map[string]any{}
	for z, p := range a.Provenance {
		sources[z] = p.Source
	}
	var savings any
	if a.SavingsPct != nil {
		savings = *a.SavingsPct
	}
	return normalize(map[string]any{
		"zone": a.Decision.Zone, "region": f.want.Representatives[a.Decision.Zone],
		"start": a.Decision.Start, "end": a.Decision.End, "mean_intensity": a.Decision.MeanIntensity,
		"savings_pct": savings, "sources": sources, "request_id": requestID,
	}).(map[string]any)
}

// equal compares two JSON values (numbers as float64).
func equal(got, want any) error {
	if g, w := normalize(got), normalize(want); !reflect.DeepEqual(g, w) {
		return fmt.Errorf("got %s, want %s", mustJSON(g), mustJSON(w))
	}
	return nil
}

func normalize(v any) any {
	var out any
	if err := json.Unmarshal([]byte(mustJSON(v)), &out); err != nil {
		panic(err)
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
