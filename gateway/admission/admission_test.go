package admission

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

// TestEligibleZones: the zones asked of carbongate after the latency
// (inclusive, directional), residency and zone filters, and the region
// each chosen zone maps back to.
func TestEligibleZones(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		spec       map[string]any
		pick       forecast.Zone // the fake scheduler's choice
		wantZones  []forecast.Zone
		wantRegion string
	}{
		{"inclusive bound", baseSpec(nil), "GB", []forecast.Zone{"DE", "GB", "IE", "NL"}, "uksouth"},
		{"one ms less", baseSpec(map[string]any{"maxLatencyMs": 39}), "NL", []forecast.Zone{"DE", "IE", "NL"}, "westeurope"},
		{"zero: the origin only", baseSpec(map[string]any{"maxLatencyMs": 0}), "NL", []forecast.Zone{"NL"}, "westeurope"},
		{"directional", baseSpec(map[string]any{"originRegion": "northeurope"}), "IE", []forecast.Zone{"DE", "GB", "IE"}, "northeurope"},
		{"residency EU", baseSpec(map[string]any{"residency": "EU"}), "DE", []forecast.Zone{"DE", "IE", "NL"}, "germanyn"},
		{"empty residency is none", baseSpec(map[string]any{"residency": ""}), "GB", []forecast.Zone{"DE", "GB", "IE", "NL"}, "uksouth"},
		{"lowest rtt represents a zone", baseSpec(nil), "IE", []forecast.Zone{"DE", "GB", "IE", "NL"}, "northeurope"},
		{"rtt tie: lowest name", baseSpec(nil), "DE", []forecast.Zone{"DE", "GB", "IE", "NL"}, "germanyn"},
		{"wide: every measured region with a zone", baseSpec(map[string]any{"maxLatencyMs": 1000}), "US-MIDA-PJM", []forecast.Zone{"DE", "GB", "IE", "NL", "US-MIDA-PJM"}, "eastus"},
		{"no latency data: the origin only", baseSpec(map[string]any{"provider": "aws", "originRegion": "eu-west-2", "maxLatencyMs": 1000}), "GB", []forecast.Zone{"GB"}, "eu-west-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := &fakeScheduler{ranking: []forecast.Zone{tt.pick}}
			w := newWebhook(t, fs, false, 0)
			r := w.Admit(context.Background(), request(admissionv1.Create, vmTemplate(t, tt.spec, map[string]string{}), nil), "req-1")
			if !r.Allowed || r.UID != "uid-1" {
				t.Fatalf("allowed=%v uid=%q result=%+v, want allowed, uid-1", r.Allowed, r.UID, r.Result)
			}
			reqs := fs.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d schedule calls, want 1", len(reqs))
			}
			if got := reqs[0].Zones; !slices.Equal(got, tt.wantZones) {
				t.Fatalf("zones=%v, want %v", got, tt.wantZones)
			}
			ops := decodePatch(t, r)
			if got := opValue(t, ops, "/spec/schedulingRegion"); got != tt.wantRegion {
				t.Fatalf("schedulingRegion=%v, want %s", got, tt.wantRegion)
			}
		})
	}
}

func opValue(t testing.TB, ops []map[string]any, path string) any {
	t.Helper()
	for _, o := range ops {
		if o["path"] == path {
			if o["op"] != "add" {
				t.Fatalf("op %v on %s, want add", o["op"], path)
			}
			return o["value"]
		}
	}
	t.Fatalf("no op on %s in %v", path, ops)
	return nil
}

// TestScheduleRequest: what the webhook asks carbongate, as POST
// /v1/schedule {"zones", "duration", "deadline"} would: no origin, the
// deadline only when set.
func TestScheduleRequest(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{}
	w := newWebhook(t, fs, false, 0)
	w.Admit(context.Background(), request(admissionv1.Create, vmTemplate(t, baseSpec(map[string]any{"duration": "PT1H30M"}), nil), nil), "")
	w.Admit(context.Background(), request(admissionv1.Create, vmTemplate(t, baseSpec(map[string]any{"deadline": nil, "duration": "2h"}), nil), nil), "")
	reqs := fs.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d calls, want 2", len(reqs))
	}
	if r := reqs[0]; r.Duration != 90*time.Minute || !r.Deadline.Equal(time.Date(2021, 6, 3, 0, 0, 0, 0, time.UTC)) ||
		r.Origin != "" || r.Signal != "" || !r.EarliestStart.IsZero() || len(r.Locations) > 0 {
		t.Fatalf("request %+v", r)
	}
	if r := reqs[1]; r.Duration != 2*time.Hour || !r.Deadline.IsZero() {
		t.Fatalf("request without deadline %+v", r)
	}
}

// TestPatch: the ops of a scheduled template, in order, with the
// provenance annotation.
func TestPatch(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := newWebhook(t, fs, false, 0)

	t.Run("provider and annotations given", func(t *testing.T) {
		t.Parallel()
		r := w.Admit(context.Background(), request(admissionv1.Create, vmTemplate(t, baseSpec(nil), map[string]string{"team": "ml"}), nil), "req-7")
		ops := decodePatch(t, r)
		if got := paths(ops); !slices.Equal(got, []string{"/spec/schedulingRegion", "/spec/schedulingTime", "/spec/instanceType", "/metadata/annotations/carbongate.io~1provenance"}) {
			t.Fatalf("paths=%v", got)
		}
		// 4 vCPUs, 16 GiB on Azure: D4a v4 (AMD EPYC 2nd Gen, 10.04 W), as
		// GET /v1/instance-types answers.
		if got := opValue(t, ops, "/spec/instanceType"); got != "D4a v4" {
			t.Fatalf("instanceType=%v", got)
		}
		if got := opValue(t, ops, "/spec/schedulingTime"); got != "2021-06-01T05:00:00Z" {
			t.Fatalf("schedulingTime=%v", got)
		}
		s, _ := opValue(t, ops, "/metadata/annotations/carbongate.io~1provenance").(string)
		if strings.ContainsAny(s, " \n") {
			t.Fatalf("provenance %q is not compact", s)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"zone": "DE", "region": "germanyn", "start": "2021-06-01T05:00:00Z", "end": "2021-06-01T08:00:00Z",
			"mean_intensity": 101.25, "savings_pct": 12.5, "request_id": "req-7",
			"sources": map[string]any{"DE": "baseline", "GB": "baseline", "IE": "baseline", "NL": "baseline"},
		}
		if g, w := mustJSON(t, p), mustJSON(t, want); g != w {
			t.Fatalf("provenance\n got %s\nwant %s", g, w)
		}
	})
	t.Run("provider and annotations absent", func(t *testing.T) {
		t.Parallel()
		r := w.Admit(context.Background(), request(admissionv1.Create, vmTemplate(t, baseSpec(map[string]any{"provider": nil}), nil), nil), "")
		ops := decodePatch(t, r)
		if got := paths(ops); !slices.Equal(got, []string{"/spec/provider", "/spec/schedulingRegion", "/spec/schedulingTime", "/spec/instanceType", "/metadata/annotations", "/metadata/annotations/carbongate.io~1provenance"}) {
			t.Fatalf("paths=%v", got)
		}
		if v := opValue(t, ops, "/spec/provider"); v != "azure" {
			t.Fatalf("provider=%v", v)
		}
		if v, ok := opValue(t, ops, "/metadata/annotations").(map[string]any); !ok || len(v) != 0 {
			t.Fatalf("annotations=%v, want {}", v)
		}
	})
}

func paths(ops []map[string]any) []string {
	var out []string
	for _, o := range ops {
		out = append(out, o["path"].(string))
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDenied: invalid specs (400 naming the field) and empty candidate
// sets (403 with the reasons); carbongate is not asked.
func TestDenied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		obj  []byte // nil: a VmTemplate with spec
		spec map[string]any
		code int32
		want []string // substrings of the message
	}{
		{"no spec", nil, nil, 400, []string{"spec: required"}},
		{"missing duration", nil, baseSpec(map[string]any{"duration": nil}), 400, []string{"spec.duration"}},
		{"bad duration", nil, baseSpec(map[string]any{"duration": "3 hours"}), 400, []string{"spec.duration", `"3 hours" is neither ISO 8601`}},
		{"numeric duration", nil, baseSpec(map[string]any{"duration": 3}), 400, []string{"spec.duration"}},
		{"zero duration", nil, baseSpec(map[string]any{"duration": "PT0H"}), 400, []string{"spec.duration"}},
		{"bad deadline", nil, baseSpec(map[string]any{"deadline": "tomorrow"}), 400, []string{"spec.deadline"}},
		{"missing maxLatencyMs", nil, baseSpec(map[string]any{"maxLatencyMs": nil}), 400, []string{"spec.maxLatencyMs"}},
		{"negative maxLatencyMs", nil, baseSpec(map[string]any{"maxLatencyMs": -1}), 400, []string{"spec.maxLatencyMs"}},
		{"fractional maxLatencyMs", nil, baseSpec(map[string]any{"maxLatencyMs": 40.5}), 400, []string{"spec.maxLatencyMs"}},
		{"string maxLatencyMs", nil, baseSpec(map[string]any{"maxLatencyMs": "40"}), 400, []string{"spec.maxLatencyMs"}},
		{"missing originRegion", nil, baseSpec(map[string]any{"originRegion": nil}), 400, []string{"spec.originRegion"}},
		{"origin of another provider", nil, baseSpec(map[string]any{"originRegion": "eu-west-2"}), 400, []string{"spec.originRegion", `"eu-west-2" is not a region of azure`}},
		{"origin in the wrong case", nil, baseSpec(map[string]any{"originRegion": "WestEurope"}), 400, []string{"spec.originRegion", `did you mean "westeurope"`}},
		{"unknown provider", nil, baseSpec(map[string]any{"provider": "ibm"}), 400, []string{"spec.provider", `"ibm"`}},
		{"provider without regions", nil, baseSpec(map[string]any{"provider": "oracle"}), 400, []string{"spec.originRegion", "oracle has no regions"}},
		{"bad residency", nil, baseSpec(map[string]any{"residency": "US"}), 400, []string{"spec.residency"}},
		{"numeric residency", nil, baseSpec(map[string]any{"residency": 27}), 400, []string{"spec.residency"}},
		{"numeric provider", nil, baseSpec(map[string]any{"provider": 1}), 400, []string{"spec.provider"}},
		{"empty provider", nil, baseSpec(map[string]any{"provider": ""}), 400, []string{"spec.provider"}},
		{"empty duration", nil, baseSpec(map[string]any{"duration": " "}), 400, []string{"spec.duration: empty duration"}},
		{"negative duration", nil, baseSpec(map[string]any{"duration": "-3h"}), 400, []string{"spec.duration: must be positive"}},
		{"minCPU zero", nil, baseSpec(map[string]any{"minCPU": 0}), 400, []string{"spec.minCPU"}},
		{"minRAM not a quantity", nil, baseSpec(map[string]any{"minRAM": "lots"}), 400, []string{"spec.minRAM"}},
		{"every problem named", nil, baseSpec(map[string]any{"duration": nil, "maxLatencyMs": nil}), 400, []string{"spec.duration", "spec.maxLatencyMs"}},
		{"object not JSON", []byte("{"), nil, 400, []string{"request.object"}},
		{"object not an object", []byte(`"vm"`), nil, 400, []string{"request.object"}},
		{"nothing eligible", nil, baseSpec(map[string]any{"originRegion": "uksouth", "maxLatencyMs": 5, "residency": "EU"}), 403,
			[]string{"no eligible region: 2 regions beyond 5 ms of uksouth, 6 without a latency measurement from uksouth, 1 outside the EU"}},
		{"origin without a zone", nil, baseSpec(map[string]any{"originRegion": "swiss", "maxLatencyMs": 0}), 403,
			[]string{"no eligible region: 8 regions without a latency measurement from swiss, 1 without a grid zone"}},
		{"no latency data", nil, baseSpec(map[string]any{"provider": "aws", "originRegion": "ca-west-1"}), 403,
			[]string{"no eligible region: no latency data for provider aws: only the origin region qualifies, 1 region without a grid zone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := &fakeScheduler{}
			w := newWebhook(t, fs, true, 0)
			obj := tt.obj
			if obj == nil {
				obj = vmTemplate(t, tt.spec, nil)
			}
			r := w.Admit(context.Background(), request(admissionv1.Create, obj, nil), "")
			if r.Allowed || r.Result == nil || r.Result.Code != tt.code || r.Patch != nil {
				t.Fatalf("allowed=%v result=%+v patch=%s, want denied with %d", r.Allowed, r.Result, r.Patch, tt.code)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.Result.Message, s) {
					t.Errorf("message %q does not contain %q", r.Result.Message, s)
				}
			}
			if n := len(fs.requests()); n != 0 {
				t.Fatalf("carbongate asked %d times", n)
			}
		})
	}
}

// TestPassThrough: operations and kinds the webhook does not schedule, and
// UPDATEs of scheduled templates, are admitted without asking carbongate.
func TestPassThrough(t *testing.T) {
	t.Parallel()
	scheduled := baseSpec(map[string]any{"schedulingRegion": "germanyn", "schedulingTime": "2021-06-01T05:00:00Z"})
	pod := request(admissionv1.Create, []byte(`{"kind":"Pod"}`), nil)
	pod.Kind.Group, pod.Kind.Kind = "", "Pod"
	tests := []struct {
		name      string
		req       *admissionv1.AdmissionRequest
		wantPatch []map[string]any
	}{
		{"delete", request(admissionv1.Delete, nil, vmTemplate(t, baseSpec(nil), nil)), nil},
		{"connect", request(admissionv1.Connect, nil, nil), nil},
		{"another kind", pod, nil},
		{"update of a scheduled template", request(admissionv1.Update, vmTemplate(t, scheduled, nil), vmTemplate(t, scheduled, nil)), nil},
		{"update changing the latency bound", request(admissionv1.Update,
			vmTemplate(t, baseSpec(map[string]any{"maxLatencyMs": 1, "schedulingRegion": "germanyn", "schedulingTime": "2021-06-01T05:00:00Z"}), nil),
			vmTemplate(t, scheduled, nil)), nil},
		{"update dropping the fields", request(admissionv1.Update, vmTemplate(t, baseSpec(nil), nil), vmTemplate(t, scheduled, nil)),
			[]map[string]any{
				{"op": "add", "path": "/spec/schedulingRegion", "value": "germanyn"},
				{"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-01T05:00:00Z"},
			}},
		{"update dropping one field", request(admissionv1.Update,
			vmTemplate(t, baseSpec(map[string]any{"schedulingRegion": "germanyn"}), nil), vmTemplate(t, scheduled, nil)),
			[]map[string]any{{"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-01T05:00:00Z"}}},
		{"update dropping the spec", request(admissionv1.Update, vmTemplate(t, nil, nil), vmTemplate(t, scheduled, nil)),
			[]map[string]any{
				{"op": "add", "path": "/spec", "value": map[string]any{}},
				{"op": "add", "path": "/spec/schedulingRegion", "value": "germanyn"},
				{"op": "add", "path": "/spec/schedulingTime", "value": "2021-06-01T05:00:00Z"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := &fakeScheduler{}
			w := newWebhook(t, fs, false, 0)
			r := w.Admit(context.Background(), tt.req, "")
			if !r.Allowed || r.Result != nil {
				t.Fatalf("allowed=%v result=%+v, want allowed", r.Allowed, r.Result)
			}
			if g, w := mustJSON(t, decodePatch(t, r)), mustJSON(t, tt.wantPatch); g != w {
				t.Fatalf("patch\n got %s\nwant %s", g, w)
			}
			if n := len(fs.requests()); n != 0 {
				t.Fatalf("carbongate asked %d times", n)
			}
		})
	}
}

// TestUpdateOfUnscheduled: an UPDATE of a template not yet scheduled is
// scheduled like a CREATE.
func TestUpdateOfUnscheduled(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"NL"}}
	w := newWebhook(t, fs, false, 0)
	obj := vmTemplate(t, baseSpec(nil), map[string]string{})
	r := w.Admit(context.Background(), request(admissionv1.Update, obj, obj), "")
	if !r.Allowed || opValue(t, decodePatch(t, r), "/spec/schedulingRegion") != "westeurope" {
		t.Fatalf("allowed=%v patch=%s", r.Allowed, r.Patch)
	}
}

// TestCarbongateFailures: the gateway's 4xx is the user's fault (400 in
// both modes); unavailable, internal errors and timeouts are 503 when
// failing closed and an unscheduled annotation when failing open.
func TestCarbongateFailures(t *testing.T) {
	t.Parallel()
	unavailable := &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "no candidate zone could be forecast"}
	tests := []struct {
		name     string
		s        *fakeScheduler
		failOpen bool
		allowed  bool
		code     int32
		why      string
	}{
		{"infeasible, closed", &fakeScheduler{err: forecast.FieldErrorf(forecast.EINFEASIBLE, "deadline", "deadline is too early")}, false, false, 400, "deadline is too early"},
		{"infeasible, open", &fakeScheduler{err: forecast.FieldErrorf(forecast.EINFEASIBLE, "deadline", "deadline is too early")}, true, false, 400, "deadline is too early"},
		{"invalid, open", &fakeScheduler{err: forecast.FieldErrorf(forecast.EINVALID, "zones", "unknown zone(s): GB")}, true, false, 400, "unknown zone(s): GB"},
		{"unavailable, closed", &fakeScheduler{err: unavailable}, false, false, 503, "carbongate unavailable: carbongate answered 503: no candidate zone could be forecast"},
		{"unavailable, open", &fakeScheduler{err: unavailable}, true, true, 0, "carbongate answered 503: no candidate zone could be forecast"},
		{"zone not asked, closed", &fakeScheduler{force: "FR"}, false, false, 503, "carbongate unavailable: carbongate chose zone FR, which is not a candidate"},
		{"internal, closed", &fakeScheduler{err: forecast.Errorf(forecast.EINTERNAL, "boom: secret detail")}, false, false, 503, "carbongate unavailable: carbongate answered 500: internal error"},
		{"slow, closed", &fakeScheduler{delay: time.Minute}, false, false, 503, "carbongate unavailable: no answer within 50ms"},
		{"slow, open", &fakeScheduler{delay: time.Minute}, true, true, 0, "no answer within 50ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWebhook(t, tt.s, tt.failOpen, 50*time.Millisecond)
			t0 := time.Now()
			r := w.Admit(context.Background(), request(admissionv1.Create, vmTemplate(t, baseSpec(nil), nil), nil), "")
			if el := time.Since(t0); el > 5*time.Second {
				t.Fatalf("took %v", el)
			}
			result := ResultUnavailable
			if tt.code == 400 {
				result = ResultDenied
			}
			checkResults(t, w, result)
			if r.Allowed != tt.allowed {
				t.Fatalf("allowed=%v result=%+v, want %v", r.Allowed, r.Result, tt.allowed)
			}
			if !tt.allowed {
				if r.Result == nil || r.Result.Code != tt.code || !strings.Contains(r.Result.Message, tt.why) || r.Patch != nil {
					t.Fatalf("result=%+v patch=%s, want %d %q", r.Result, r.Patch, tt.code, tt.why)
				}
				if strings.Contains(r.Result.Message, "secret") {
					t.Fatalf("message %q leaks an internal error", r.Result.Message)
				}
				return
			}
			want := []map[string]any{
				{"op": "add", "path": "/metadata/annotations", "value": map[string]any{}},
				{"op": "add", "path": "/metadata/annotations/carbongate.io~1unscheduled", "value": tt.why},
			}
			if g, w := mustJSON(t, decodePatch(t, r)), mustJSON(t, want); g != w {
				t.Fatalf("patch\n got %s\nwant %s", g, w)
			}
			if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "carbongate unavailable") {
				t.Fatalf("warnings=%q", r.Warnings)
			}
		})
	}
}

// checkResults: w decided one review, counted under result want.
func checkResults(t *testing.T, w *Webhook, want string) {
	t.Helper()
	for _, r := range []string{ResultAdmitted, ResultDenied, ResultUnavailable} {
		n := testutil.ToFloat64(w.reviews.WithLabelValues(r))
		if r == want && n != 1 || r != want && n != 0 {
			t.Errorf("carbongate_admission_reviews_total{result=%q} = %v after one review counted as %s", r, n, want)
		}
	}
}

// TestReviewResults: a scheduled template and one admitted unchanged are
// "admitted", one without an eligible region "denied"; the counter is
// registered under its name.
func TestReviewResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		want string
	}{
		{"scheduled", request(admissionv1.Create, vmTemplate(t, baseSpec(nil), nil), nil), ResultAdmitted},
		{"delete", request(admissionv1.Delete, nil, nil), ResultAdmitted},
		{"no eligible region", request(admissionv1.Create, vmTemplate(t, baseSpec(map[string]any{"originRegion": "uksouth", "maxLatencyMs": 5, "residency": "EU"}), nil), nil), ResultDenied},
		{"malformed spec", request(admissionv1.Create, vmTemplate(t, baseSpec(map[string]any{"duration": "soon"}), nil), nil), ResultDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			w, err := New(Config{Scheduler: &fakeScheduler{}, Data: world(), Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			w.Admit(context.Background(), tt.req, "")
			checkResults(t, w, tt.want)
			if n, err := testutil.GatherAndCount(reg, "carbongate_admission_reviews_total"); err != nil || n != 3 {
				t.Fatalf("registered series: %d, %v; want the three results", n, err)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {Scheduler: &fakeScheduler{}}, {Data: world()}, {Scheduler: &fakeScheduler{}, Data: world(), Timeout: -1}} {
		if _, err := New(cfg); forecast.ErrorCode(err) != forecast.EINVALID {
			t.Errorf("New(%+v) err=%v, want EINVALID", cfg, err)
		}
	}
}
