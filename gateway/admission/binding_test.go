package admission

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// fakeFederation has the member clusters members(), namespaces as
// optedIn() and workloads' annotations by name ("ns/name"), or err.
type fakeFederation struct {
	clusters  []MemberCluster // nil: members()
	workloads map[string]map[string]string
	err       error
	asked     *[]WorkloadRef
}

func (f fakeFederation) Clusters() []MemberCluster {
	if f.clusters != nil {
		return f.clusters
	}
	return members()
}
func (f fakeFederation) Namespace(name string) (map[string]string, map[string]string, bool) {
	return fakeCluster{ns: optedIn()}.Namespace(name)
}
func (f fakeFederation) Annotations(_ context.Context, ref WorkloadRef) (map[string]string, error) {
	if f.asked != nil {
		*f.asked = append(*f.asked, ref)
	}
	if f.err != nil {
		return nil, f.err
	}
	a, ok := f.workloads[ref.Namespace+"/"+ref.Name]
	if !ok {
		return nil, errors.New("not found")
	}
	return maps.Clone(a), nil
}

func bindingHook(t testing.TB, s Scheduler, f fakeFederation) *Webhook {
	t.Helper()
	return newBindingHook(t, s, Bindings{Federation: f})
}

func newBindingHook(t testing.TB, s Scheduler, b Bindings) *Webhook {
	t.Helper()
	w, err := New(Config{Scheduler: s, Data: world(), Bindings: b,
		Workloads: Workloads{Now: func() time.Time { return now }, Signer: testSigner}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// bindingObject is a ResourceBinding of Deployment ns/name as Karmada
// creates it, with placement (JSON) and annotations.
func bindingObject(t testing.TB, ns, name, placement string, annotations map[string]string) map[string]any {
	t.Helper()
	var p any
	if err := json.Unmarshal([]byte(placement), &p); err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"name": name + "-deployment", "namespace": ns}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": meta,
		"spec": map[string]any{"resource": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns, "name": name},
			"replicas": 2, "placement": p}}
}

func bindingRequest(t testing.TB, op admissionv1.Operation, obj, old map[string]any) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Kind: metav1.GroupVersionKind{Group: BindingGroup, Version: "v1alpha2", Kind: BindingKind},
		Namespace: obj["metadata"].(map[string]any)["namespace"].(string), Operation: op,
		Object: runtime.RawExtension{Raw: mustMarshal(t, obj)}}
	if old != nil {
		req.OldObject.Raw = mustMarshal(t, old)
	}
	return req
}

// placed is what the tests read of an admitted binding.
type placed struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Replicas   int              `json:"replicas"`
		Placement  bindingPlacement `json:"placement"`
		Suspension *struct {
			Scheduling  *bool `json:"scheduling"`
			Dispatching *bool `json:"dispatching"`
		} `json:"suspension"`
	} `json:"spec"`
}

// held reports whether p is held by carbongate: labelled, its scheduling
// suspended.
func (p placed) held() bool {
	s := p.Spec.Suspension
	return p.Metadata.Labels[hold.Label] == hold.Held && s != nil && s.Scheduling != nil && *s.Scheduling
}

const threeMembers = `{"clusterAffinity":{"clusterNames":["m1","m2","m3"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`

func TestPlaceBinding(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	var asked []WorkloadRef
	deadline := t0.Add(10 * time.Hour)
	w := bindingHook(t, fs, fakeFederation{asked: &asked, workloads: map[string]map[string]string{
		"web/api": {hold.AnnotationDeadline: deadline.Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}}})
	var got placed
	r := admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), &got)
	if !r.Allowed || r.Result != nil {
		t.Fatalf("response %+v, want admitted quietly", r)
	}
	if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != "m2" {
		t.Fatalf("clusterNames %v, want [m2]", names)
	}
	if got.Spec.Replicas != 2 || got.Spec.Suspension != nil || got.Metadata.Labels[hold.Label] != "" {
		t.Fatalf("the rest of the binding changed (placed without Hold: not held): %+v", got)
	}
	a := got.Metadata.Annotations
	d, err := hold.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if want := (hold.Decision{Region: "germanywc", Zone: "DE", Start: t0, ReleaseBy: deadline.Add(-3 * time.Hour)}); d != want {
		t.Fatalf("decision %+v, want %+v", d, want)
	}
	if a[AnnotationCluster] != "m2" || a[AnnotationProvenance] == "" || a[hold.AnnotationSavingsPct] != "12.5" || a[hold.AnnotationBaselineZone] == "" {
		t.Fatalf("annotations %v: want cluster m2, provenance, savings and its baseline zone", a)
	}
	if err := testSigner.Verify(hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}, a); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if want := (WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "web", Name: "api"}); len(asked) != 1 || asked[0] != want {
		t.Fatalf("read workloads %v, want [%v]", asked, want)
	}
	reqs := fs.requests()
	if len(reqs) != 1 || strings.Join(zoneNames(reqs[0].Zones), ",") != "DE,GB,NL" || reqs[0].Duration != 3*time.Hour || !reqs[0].Deadline.Equal(deadline) {
		t.Fatalf("asked %+v, want zones DE,GB,NL for 3h by %v", reqs, deadline)
	}
}

// TestPlaceBindingNotReady: a binding that runs at once (the webhook
// does not hold) is not narrowed to a member Karmada marks not Ready now —
// its zone is not even asked about — while a held one may be (a decision
// looks hours ahead; the controller moves it off at its release if the
// member is still down).
func TestPlaceBindingNotReady(t *testing.T) {
	t.Parallel()
	fed := fakeFederation{clusters: notReady(), workloads: map[string]map[string]string{
		"web/api": {hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}}}
	for _, held := range []bool{false, true} {
		fs := &fakeScheduler{ranking: []forecast.Zone{"DE", "NL"}}
		w := newBindingHook(t, fs, Bindings{Federation: fed, Hold: held})
		var got placed
		admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), &got)
		want, zones := "m1", "GB,NL"
		if held {
			want, zones = "m2", "DE,GB,NL"
		}
		reqs := fs.requests()
		if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != want || got.held() != held ||
			len(reqs) != 1 || strings.Join(zoneNames(reqs[0].Zones), ",") != zones {
			t.Errorf("hold %v: clusterNames %v held %v, asked %v; want [%s], zones %s", held, names, got.held(), reqs, want, zones)
		}
	}
}

func zoneNames(zs []forecast.Zone) []string {
	s := make([]string, len(zs))
	for i, z := range zs {
		s[i] = string(z)
	}
	return s
}

// TestPlaceBindingNamespace: a workload without a deadline in an opted-in
// namespace is placed within the namespace's max delay; one in another
// namespace is admitted unchanged, without asking the gateway.
func TestPlaceBindingNamespace(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"GB"}}
	w := bindingHook(t, fs, fakeFederation{workloads: map[string]map[string]string{"batch/etl": nil, "web/api": nil}})
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "batch", "etl", threeMembers, nil), nil), &got)
	if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != "m3" {
		t.Fatalf("clusterNames %v, want [m3]", names)
	}
	if reqs := fs.requests(); len(reqs) != 1 || !reqs[0].Deadline.Equal(now.Add(6*time.Hour+DefaultWorkloadDuration)) {
		t.Fatalf("asked %+v, want a deadline of now + PT6H + the default duration", reqs)
	}
	r := w.Admit(context.Background(), bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), "req-1")
	if !r.Allowed || r.Patch != nil || len(fs.requests()) != 1 {
		t.Fatalf("a binding of a workload not opted in: %+v, asked %d times", r, len(fs.requests()))
	}
}

// TestBindingUnplaced: whatever keeps carbongate from placing a binding
// admits it unchanged but for carbongate.io/unscheduled saying why.
func TestBindingUnplaced(t *testing.T) {
	t.Parallel()
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339)}
	for _, c := range []struct {
		name      string
		fed       fakeFederation
		sched     *fakeScheduler
		placement string
		why       string
	}{
		{name: "workload unreadable", fed: fakeFederation{err: errors.New("connection refused")}, why: "cannot read the workload Deployment web/api (apps/v1): connection refused"},
		{name: "bad deadline", fed: fakeFederation{workloads: map[string]map[string]string{"web/api": {hold.AnnotationDeadline: "tomorrow"}}},
			why: "the workload's metadata.annotations[carbongate.io/deadline]: \"tomorrow\" is not an RFC 3339 time"},
		{name: "bad power", fed: fakeFederation{workloads: map[string]map[string]string{"web/api": {hold.AnnotationDeadline: deadline[hold.AnnotationDeadline], hold.AnnotationPowerWatts: "-1"}}},
			why: "carbongate.io/power-watts"},
		{name: "deadline passed", fed: fakeFederation{workloads: map[string]map[string]string{"web/api": {hold.AnnotationDeadline: now.Format(time.RFC3339)}}},
			why: "cannot place: the deadline"},
		{name: "no zone", fed: fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}},
			placement: `{"clusterAffinity":{"clusterNames":["m4"]}}`, why: `cluster m4 is not a candidate: region "swiss"`},
		{name: "gateway down", fed: fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}},
			sched: &fakeScheduler{err: forecast.Errorf(forecast.EUNAVAILABLE, "no forecast")}, why: "carbongate unavailable: carbongate answered 503: no forecast"},
		{name: "gateway refuses", fed: fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}},
			sched: &fakeScheduler{err: forecast.Errorf(forecast.EINFEASIBLE, "too long")}, why: "cannot place: too long"},
	} {
		sched := c.sched
		if sched == nil {
			sched = &fakeScheduler{}
		}
		w := bindingHook(t, sched, c.fed)
		pl := c.placement
		if pl == "" {
			pl = threeMembers
		}
		var got placed
		r := admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", pl, nil), nil), &got)
		why := got.Metadata.Annotations[AnnotationUnscheduled]
		if !r.Allowed || !strings.Contains(why, c.why) || len(r.Warnings) == 0 {
			t.Errorf("%s: allowed %v, unscheduled %q, warnings %q; want admitted, unscheduled containing %q", c.name, r.Allowed, why, r.Warnings, c.why)
		}
		if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != len(placement(t, pl).ClusterAffinity.ClusterNames) {
			t.Errorf("%s: clusterNames %v changed", c.name, names)
		}
	}
}

// TestBindingUpdateReapplies: Karmada's rewrite of the placement from the
// policy (all three members, the annotations dropped) is narrowed again to
// the recorded cluster, with the recorded annotations; a user's edit of
// the decision is put back.
func TestBindingUpdateReapplies(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := bindingHook(t, fs, fakeFederation{workloads: map[string]map[string]string{"batch/etl": nil}})
	var first placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "batch", "etl", threeMembers, nil), nil), &first)
	old := bindingObject(t, "batch", "etl", `{"clusterAffinity":{"clusterNames":["m2"]}}`, first.Metadata.Annotations)
	for _, annotations := range []map[string]string{nil, {AnnotationCluster: "m1", hold.AnnotationZone: "NL", "team": "a"}} {
		var got placed
		r := admitInto(t, w, bindingRequest(t, admissionv1.Update, bindingObject(t, "batch", "etl", threeMembers, annotations), old), &got)
		if !r.Allowed {
			t.Fatalf("denied: %+v", r.Result)
		}
		if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != "m2" {
			t.Fatalf("clusterNames %v, want [m2]", names)
		}
		for k, v := range first.Metadata.Annotations {
			if got.Metadata.Annotations[k] != v {
				t.Fatalf("annotation %s = %q, want %q", k, got.Metadata.Annotations[k], v)
			}
		}
	}
	if n := len(fs.requests()); n != 1 {
		t.Fatalf("asked the gateway %d times, want once (UPDATE never decides)", n)
	}
	// An UPDATE of a binding carbongate did not place changes nothing.
	plain := bindingObject(t, "batch", "etl", threeMembers, nil)
	if r := w.Admit(context.Background(), bindingRequest(t, admissionv1.Update, plain, plain), "req-2"); !r.Allowed || r.Patch != nil {
		t.Fatalf("update of an unplaced binding: %+v", r)
	}
}

// TestBindingForgedDecision: a binding created with carbongate's outputs
// loses them; its workload not opted in, nothing else changes.
func TestBindingForgedDecision(t *testing.T) {
	t.Parallel()
	w := bindingHook(t, &fakeScheduler{}, fakeFederation{workloads: map[string]map[string]string{"web/api": nil}})
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers,
		map[string]string{AnnotationCluster: "m1", hold.AnnotationSavingsPct: "99", "team": "a"}), nil), &got)
	if a := got.Metadata.Annotations; len(a) != 1 || a["team"] != "a" {
		t.Fatalf("annotations %v, want only team", a)
	}
	if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 3 {
		t.Fatalf("clusterNames %v, want the three", names)
	}
}

// TestBindingHold: with Hold, a placed binding is held (label, scheduling
// suspended); an UPDATE that drops the label gets it back, one the
// controller made (released) keeps it; a staged binding keeps its dispatch
// held until released; a binding created suspended by its creator is
// placed only.
func TestBindingHold(t *testing.T) {
	t.Parallel()
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339)}
	fed := fakeFederation{workloads: map[string]map[string]string{"web/api": deadline, "batch/etl": nil}}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, Bindings{Federation: fed, Hold: true})
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), &got)
	if !got.held() || len(got.Spec.Placement.ClusterAffinity.ClusterNames) != 1 {
		t.Fatalf("placed %+v, want held and narrowed", got)
	}

	old := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, got.Metadata.Annotations)
	old["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
	for _, label := range []string{"", hold.Released} {
		upd := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, got.Metadata.Annotations)
		if label != "" {
			upd["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: label}
		}
		var after placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &after)
		want := label
		if want == "" {
			want = hold.Held
		}
		if after.Metadata.Labels[hold.Label] != want {
			t.Errorf("UPDATE with label %q: label %q, want %q", label, after.Metadata.Labels[hold.Label], want)
		}
	}

	// Staged by the controller (scheduled, dispatch held): Karmada's
	// detector resets dispatching from the policy; the webhook keeps it
	// until the controller labels the binding released.
	staged := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, got.Metadata.Annotations)
	staged["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
	staged["spec"].(map[string]any)["suspension"] = map[string]any{"scheduling": false, "dispatching": true}
	for _, tc := range []struct {
		label, dispatching any // the update's; nil: absent
		want               bool
	}{{label: hold.Held, want: true}, {want: true}, {label: hold.Held, dispatching: false, want: true}, {label: hold.Released, dispatching: false}, {label: hold.Released}} {
		upd := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, got.Metadata.Annotations)
		if tc.label != nil {
			upd["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: tc.label}
		}
		susp := map[string]any{"scheduling": false}
		if tc.dispatching != nil {
			susp["dispatching"] = tc.dispatching
		}
		upd["spec"].(map[string]any)["suspension"] = susp
		var after placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, staged), &after)
		s := after.Spec.Suspension
		if held := s != nil && s.Dispatching != nil && *s.Dispatching; held != tc.want {
			t.Errorf("staged, UPDATE with label %v and dispatching %v: dispatch held %v, want %v", tc.label, tc.dispatching, held, tc.want)
		}
	}

	suspended := bindingObject(t, "web", "api", threeMembers, nil)
	suspended["spec"].(map[string]any)["suspension"] = map[string]any{"scheduling": true}
	var theirs placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, suspended, nil), &theirs)
	if theirs.Metadata.Labels[hold.Label] != "" || len(theirs.Spec.Placement.ClusterAffinity.ClusterNames) != 1 {
		t.Fatalf("created suspended: %+v, want placed, not labelled held", theirs)
	}
}

// heldBinding admits web/api, a binding over threeMembers whose workload
// has a deadline, into a holding webhook whose scheduler ranks DE first:
// the webhook and the binding it placed and held.
func heldBinding(t *testing.T) (*Webhook, placed) {
	t.Helper()
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339)}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}},
		Bindings{Federation: fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}}, Hold: true})
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), &got)
	return w, got
}

// TestBindingRedecided: the controller's move of a held binding's start
// (the decision re-signed) survives the webhook's UPDATE; the same change
// unsigned, or on a binding no longer held, is put back.
func TestBindingRedecided(t *testing.T) {
	t.Parallel()
	w, got := heldBinding(t)
	held := got.Metadata.Annotations
	moved := t0.Add(2 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		name   string
		sign   bool
		label  string
		wantAt string
	}{
		{"re-signed", true, hold.Held, moved},
		{"unsigned", false, hold.Held, held[hold.AnnotationStart]},
		{"re-signed but released", true, hold.Released, held[hold.AnnotationStart]},
	} {
		a := maps.Clone(held)
		a[hold.AnnotationStart] = moved
		if c.sign {
			a[hold.AnnotationSignature] = testSigner.Sign(hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}, a)
		}
		old := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, held)
		old["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
		upd := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, a)
		upd["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: c.label}
		var after placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &after)
		if at := after.Metadata.Annotations[hold.AnnotationStart]; at != c.wantAt {
			t.Errorf("%s: start %s, want %s", c.name, at, c.wantAt)
		}
	}
}
