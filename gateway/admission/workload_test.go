package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// fakeCluster has nodes (one per region of regions, then nodes) and
// namespaces with labels and annotations.
type fakeCluster struct {
	regions []string
	nodes   []*corev1.Node
	ns      map[string][2]map[string]string // name → labels, annotations
}

func (f fakeCluster) Nodes() []*corev1.Node {
	var nodes []*corev1.Node
	for i, r := range f.regions {
		nodes = append(nodes, node(fmt.Sprintf("node-%d", i), map[string]string{hold.RegionLabel: r}))
	}
	return append(nodes, f.nodes...)
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}
func (f fakeCluster) Namespace(name string) (map[string]string, map[string]string, bool) {
	n, ok := f.ns[name]
	return n[0], n[1], ok
}

// testSigner signs the decisions of the webhooks of these tests.
var testSigner, _ = hold.NewSigner([]byte("carbongate admission tests' decision key"))

// now is the webhook's clock in these tests: before t0, the fake
// scheduler's start.
var now = t0.Add(-2 * time.Hour)

func workloadHook(t testing.TB, s Scheduler, c fakeCluster, region string) *Webhook {
	t.Helper()
	w, err := New(Config{Scheduler: s, Data: world(), Workloads: Workloads{Cluster: c, Region: region, Now: func() time.Time { return now }, Signer: testSigner}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func optedIn() map[string][2]map[string]string {
	return map[string][2]map[string]string{
		"batch": {{hold.NamespaceLabel: hold.NamespaceEnabled}, {hold.AnnotationMaxDelay: "PT6H"}},
		"web":   {{"team": "web"}, nil},
		"now":   {{hold.NamespaceLabel: hold.NamespaceEnabled}, {hold.AnnotationMaxDelay: "PT0S"}},
		"trial": {{hold.NamespaceModeLabel: hold.ModeShadow}, nil},
	}
}

func job(ns string, annotations map[string]string, suspend bool) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: ns, Annotations: annotations},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
}

func workloadRequest(t testing.TB, op admissionv1.Operation, obj, old runtime.Object) *admissionv1.AdmissionRequest {
	t.Helper()
	raw := func(o runtime.Object) []byte {
		if o == nil {
			return nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return &admissionv1.AdmissionRequest{UID: "uid-1", Kind: metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Namespace: obj.(metav1.Object).GetNamespace(), Operation: op,
		Object: runtime.RawExtension{Raw: raw(obj)}, OldObject: runtime.RawExtension{Raw: raw(old)}}
}

// admitInto admits req and decodes the patched object into out; it
// returns the response.
func admitInto(t testing.TB, w *Webhook, req *admissionv1.AdmissionRequest, out any) *admissionv1.AdmissionResponse {
	t.Helper()
	r := w.Admit(context.Background(), req, "req-1")
	doc := req.Object.Raw
	if r.Patch != nil {
		p, err := jsonpatch.DecodePatch(r.Patch)
		if err != nil {
			t.Fatalf("patch %s: %v", r.Patch, err)
		}
		if doc, err = p.Apply(doc); err != nil {
			t.Fatalf("applying %s: %v", r.Patch, err)
		}
	}
	if err := json.Unmarshal(doc, out); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestHoldJob(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := workloadHook(t, fs, fakeCluster{regions: []string{"westeurope", "germanyn", "germanywc"}, ns: optedIn()}, "")
	deadline := t0.Add(10 * time.Hour)
	in := job("web", map[string]string{hold.AnnotationDeadline: deadline.Format(time.RFC3339), hold.AnnotationDuration: "PT3H", hold.AnnotationPowerWatts: "400"}, false)
	var got batchv1.Job
	r := admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got)
	if !r.Allowed {
		t.Fatalf("denied: %+v", r.Result)
	}
	if got.Spec.Suspend == nil || !*got.Spec.Suspend || got.Labels[hold.Label] != hold.Held {
		t.Fatalf("suspend=%v labels=%v, want suspended and held", got.Spec.Suspend, got.Labels)
	}
	d, err := hold.Parse(got.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	want := hold.Decision{Region: "germanyn", Zone: "DE", Start: t0, ReleaseBy: deadline.Add(-3 * time.Hour)}
	if d != want {
		t.Fatalf("decision %+v, want %+v", d, want)
	}
	if got.Annotations[hold.AnnotationSavingsPct] != "12.5" || got.Annotations[AnnotationProvenance] == "" {
		t.Fatalf("annotations %v: want savings 12.5 and provenance", got.Annotations)
	}
	// 400 W for 3 h = 1.2 kWh, × (120 − 101.25) g/kWh between the fake's
	// baseline and decision = 22.5 g.
	if g := got.Annotations[hold.AnnotationAvoidedGrams]; g != "22.5" {
		t.Fatalf("avoided %q g, want 22.5", g)
	}
	// No cluster region: the promise runs against the gateway's baseline,
	// the first candidate's zone.
	if b := got.Annotations[hold.AnnotationBaselineZone]; b != "DE" {
		t.Fatalf("baseline zone %q, want DE", b)
	}
	reqs := fs.requests()
	if len(reqs) != 1 || len(reqs[0].Zones) != 2 || reqs[0].Duration != 3*time.Hour || !reqs[0].Deadline.Equal(deadline) {
		t.Fatalf("asked %+v, want zones [DE NL], 3h, deadline %v", reqs, deadline)
	}
	terms := got.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Values[0] != "germanyn" ||
		terms[0].MatchExpressions[0].Key != hold.RegionLabel {
		t.Fatalf("node affinity %+v, want region In [germanyn]", terms)
	}
}

func TestHoldJobNamespaceDefaults(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{}
	w := workloadHook(t, fs, fakeCluster{ns: optedIn()}, "westeurope")
	defer func() {
		if reqs := fs.requests(); len(reqs) != 1 || reqs[0].Origin != "NL" {
			t.Errorf("asked %+v, want the baseline in the cluster's region's zone NL", reqs)
		}
	}()
	in := job("batch", nil, false)
	var got batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got)
	d, err := hold.Parse(got.Annotations)
	if err != nil {
		t.Fatalf("%v (annotations %v)", err, got.Annotations)
	}
	// Namespace max delay PT6H, default duration 1 h: deadline now+7h.
	if want := now.Add(6 * time.Hour); !d.ReleaseBy.Equal(want) || d.Region != "westeurope" {
		t.Fatalf("decision %+v, want release-by %v in westeurope", d, want)
	}
	if got.Spec.Template.Spec.Affinity != nil {
		t.Fatalf("one region: affinity %+v, want none", got.Spec.Template.Spec.Affinity)
	}
	if b := got.Annotations[hold.AnnotationBaselineZone]; b != "NL" {
		t.Fatalf("baseline zone %q, want the cluster's region's zone NL", b)
	}
	if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: got.Name}, got.Annotations); err != nil {
		t.Fatalf("signature with the baseline zone: %v", err)
	}
}

func TestWorkloadsLeftAlone(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{}
	w := workloadHook(t, fs, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	owned := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "batch", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u", Controller: new(true)}}}}
	for name, obj := range map[string]runtime.Object{
		"namespace not opted in": job("web", nil, false),
		"created suspended":      job("batch", nil, true),
		"pod of a job":           owned,
	} {
		r := w.Admit(context.Background(), workloadRequest(t, admissionv1.Create, obj, nil), "req-1")
		if !r.Allowed || r.Patch != nil {
			t.Errorf("%s: allowed=%v patch=%s, want admitted unchanged", name, r.Allowed, r.Patch)
		}
	}
	if n := len(fs.requests()); n != 0 {
		t.Fatalf("%d scheduling calls, want none", n)
	}
	nocluster := newWebhook(t, fs, false, 0)
	if r := nocluster.Admit(context.Background(), workloadRequest(t, admissionv1.Create, job("batch", nil, false), nil), "r"); !r.Allowed || r.Patch != nil {
		t.Fatalf("without a cluster: allowed=%v patch=%s, want unchanged", r.Allowed, r.Patch)
	}
}

func TestHoldPod(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{ns: optedIn(), nodes: []*corev1.Node{
		node("we", map[string]string{hold.RegionLabel: "westeurope", "disk": "ssd"}), node("uk", map[string]string{hold.RegionLabel: "uksouth", "gpu": "a100"})}}, "")
	in := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "batch"},
		Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}},
			}}}}, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	var got corev1.Pod
	admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got)
	if len(got.Spec.SchedulingGates) != 1 || got.Spec.SchedulingGates[0].Name != hold.Gate || got.Labels[hold.Label] != hold.Held {
		t.Fatalf("gates %v labels %v, want the hold gate and label", got.Spec.SchedulingGates, got.Labels)
	}
	for i, term := range got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		last := term.MatchExpressions[len(term.MatchExpressions)-1]
		if len(term.MatchExpressions) != 2 || last.Key != hold.RegionLabel || last.Values[0] != "westeurope" {
			t.Errorf("term %d: %+v, want its own requirement AND region In [westeurope]", i, term.MatchExpressions)
		}
	}
}

func TestWorkloadBadInput(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	for _, tc := range []struct{ annotations map[string]string }{
		{map[string]string{hold.AnnotationDeadline: "tomorrow"}},
		{map[string]string{hold.AnnotationDeadline: now.Add(30 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "-PT1H"}},
		{map[string]string{hold.AnnotationDeadline: now.Add(30 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "soon"}},
		{map[string]string{hold.AnnotationDeadline: now.Add(30 * time.Hour).Format(time.RFC3339), hold.AnnotationPowerWatts: "-5"}},
		{map[string]string{hold.AnnotationDeadline: now.Add(30 * time.Hour).Format(time.RFC3339), hold.AnnotationPowerWatts: "1e9"}},
		{map[string]string{hold.AnnotationDeadline: now.Add(30 * time.Hour).Format(time.RFC3339), hold.AnnotationPowerWatts: "NaN"}},
	} {
		r := w.Admit(context.Background(), workloadRequest(t, admissionv1.Create, job("web", tc.annotations, false), nil), "r")
		if r.Allowed || r.Result.Code != 400 || !strings.Contains(r.Result.Message, "metadata.annotations[carbongate.io/") {
			t.Errorf("%v: allowed=%v result=%+v, want 400 naming the annotation", tc.annotations, r.Allowed, r.Result)
		}
	}
}

func TestWorkloadUnheld(t *testing.T) {
	t.Parallel()
	down := &fakeScheduler{err: forecast.Errorf(forecast.EUNAVAILABLE, "no forecasts")}
	for name, w := range map[string]*Webhook{
		"gateway unavailable": workloadHook(t, down, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, ""),
		"no region":           workloadHook(t, &fakeScheduler{}, fakeCluster{ns: optedIn()}, ""),
	} {
		checkUnheld(t, name, w, job("batch", nil, false), "")
	}
}

// checkUnheld admits in and checks it is admitted unheld, with the
// unscheduled annotation (containing why) and a warning.
func checkUnheld(t *testing.T, name string, w *Webhook, in runtime.Object, why string) {
	t.Helper()
	var got batchv1.Job
	r := admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got)
	if !r.Allowed || *got.Spec.Suspend || got.Labels[hold.Label] != "" || got.Annotations[AnnotationUnscheduled] == "" || len(r.Warnings) == 0 {
		t.Errorf("%s: allowed=%v (%+v) suspend=%v labels=%v annotations=%v, want admitted unheld with why", name, r.Allowed, r.Result, *got.Spec.Suspend, got.Labels, got.Annotations)
	}
	if !strings.Contains(got.Annotations[AnnotationUnscheduled], why) {
		t.Errorf("%s: unscheduled %q, want it to say %q", name, got.Annotations[AnnotationUnscheduled], why)
	}
}

// TestWorkloadCannotPlace: what carbongate cannot place runs unheld, with
// the real gateway's reason, never denied.
func TestWorkloadCannotPlace(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	w, err := New(Config{Scheduler: g.Service, Data: mustBundle(t), Workloads: Workloads{
		Cluster: fakeCluster{regions: []string{"westeurope", "swedencentral"}, ns: optedIn()},
		Now:     func() time.Time { return replayStart }, Signer: testSigner}})
	if err != nil {
		t.Fatal(err)
	}
	long := job("batch", nil, false)
	long.Spec.ActiveDeadlineSeconds = new(int64(432000)) // 120 h
	checkUnheld(t, "activeDeadlineSeconds beyond the horizon", w, long, "longer than the forecast horizon")
	long = job("web", map[string]string{hold.AnnotationDeadline: replayStart.Add(200 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "P5D"}, false)
	checkUnheld(t, "duration beyond the horizon", w, long, "longer than the forecast horizon")
	soon := job("web", map[string]string{hold.AnnotationDeadline: replayStart.Add(30 * time.Minute).Format(time.RFC3339)}, false)
	checkUnheld(t, "deadline too soon", w, soon, "sooner than now")
}

func TestWorkloadUpdateKeepsDecision(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	var held batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, job("batch", nil, false), nil), &held)
	stripped := held.DeepCopy()
	stripped.Labels = map[string]string{"resized": "yes"}
	stripped.Annotations = nil
	var got batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Update, stripped, &held), &got)
	if got.Labels[hold.Label] != hold.Held || got.Labels["resized"] != "yes" {
		t.Fatalf("labels %v, want the hold label back beside the update's", got.Labels)
	}
	if d, err := hold.Parse(got.Annotations); err != nil || d.Region != "westeurope" {
		t.Fatalf("decision %+v %v, want the old one back", d, err)
	}
}

func TestHoldJobRespectsItsRegion(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := workloadHook(t, fs, fakeCluster{regions: []string{"westeurope", "germanyn", "uksouth"}, ns: optedIn()}, "")
	in := job("batch", nil, false)
	in.Spec.Template.Spec.NodeSelector = map[string]string{hold.RegionLabel: "westeurope"}
	var got batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got)
	if reqs := fs.requests(); len(reqs) != 1 || !slices.Equal(reqs[0].Zones, []forecast.Zone{"NL"}) {
		t.Fatalf("asked %+v, want only NL: the pods may only run in westeurope", reqs)
	}
	if d, err := hold.Parse(got.Annotations); err != nil || d.Region != "westeurope" {
		t.Fatalf("decision %+v (%v), want westeurope", d, err)
	}
}

// TestNamespaceMaxDelay: a namespace's max delay of zero runs its
// workloads at once; an invalid one is the default, with a warning and a
// log line. The real gateway's clock is off the whole second, as a
// running clock is.
func TestNamespaceMaxDelay(t *testing.T) {
	t.Parallel()
	start := replayStart.Add(500 * time.Millisecond)
	g := newGatewayAt(t, start)
	var logs bytes.Buffer
	ns := map[string][2]map[string]string{}
	for _, v := range []string{"PT0S", "0s", "-PT1H", "garbage", ""} {
		ns["ns"+v] = [2]map[string]string{{hold.NamespaceLabel: hold.NamespaceEnabled}, {hold.AnnotationMaxDelay: v}}
	}
	w, err := New(Config{Scheduler: g.Service, Data: mustBundle(t), Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Workloads: Workloads{
		Cluster: fakeCluster{regions: []string{"westeurope", "swedencentral"}, ns: ns}, Now: func() time.Time { return g.Service.Now().Now }, Signer: testSigner}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"PT0S", "0s"} {
		var got batchv1.Job
		r := admitInto(t, w, workloadRequest(t, admissionv1.Create, job("ns"+v, nil, false), nil), &got)
		if !r.Allowed || *got.Spec.Suspend || got.Labels[hold.Label] != "" || !strings.Contains(got.Annotations[AnnotationUnscheduled], "runs at once") || len(r.Warnings) != 0 {
			t.Errorf("max-delay %s: allowed=%v (%+v) suspend=%v labels=%v annotations=%v warnings=%q, want run at once unheld, no warning",
				v, r.Allowed, r.Result, *got.Spec.Suspend, got.Labels, got.Annotations, r.Warnings)
		}
	}
	for _, v := range []string{"-PT1H", "garbage", ""} {
		logs.Reset()
		var got batchv1.Job
		r := admitInto(t, w, workloadRequest(t, admissionv1.Create, job("ns"+v, nil, false), nil), &got)
		d, err := hold.Parse(got.Annotations)
		if !r.Allowed || err != nil || !d.ReleaseBy.Equal(start.Add(DefaultMaxDelay).Truncate(time.Second)) {
			t.Errorf("max-delay %q: allowed=%v (%+v) decision %+v (%v), want held with release-by now + %v", v, r.Allowed, r.Result, d, err, DefaultMaxDelay)
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], hold.AnnotationMaxDelay) || !strings.Contains(logs.String(), "invalid namespace max delay") {
			t.Errorf("max-delay %q: warnings %q, log %s, want a warning and a log line naming it", v, r.Warnings, logs.String())
		}
	}
}

// TestWorkloadPatchKeepsTheObject: the patches only add to the object as
// sent: fields k8s.io/api does not know, quantities as written and absent
// fields (no status) stay as they are.
func TestWorkloadPatchKeepsTheObject(t *testing.T) {
	t.Parallel()
	const jobJSON = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"train","namespace":"batch","labels":null},
	"spec":{"futureField":{"x":1},"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox",
	"resources":{"requests":{"cpu":"1000m","memory":"1024Mi"}},"futureContainerField":true}]}}}}`
	const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"batch","annotations":{"a":"b"}},
	"spec":{"schedulingGates":[{"name":"other"}],"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"500m"}}}],
	"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
	{"matchFields":[{"key":"metadata.name","operator":"In","values":["we-1"]}]},{"matchExpressions":[{"key":"disk","operator":"Exists"}]}]}}}}}`
	cl := fakeCluster{ns: optedIn(), nodes: []*corev1.Node{
		node("we-1", map[string]string{hold.RegionLabel: "westeurope"}), node("de-1", map[string]string{hold.RegionLabel: "germanyn", "disk": "ssd"})}}
	held := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, cl, "")
	down := workloadHook(t, &fakeScheduler{err: forecast.Errorf(forecast.EUNAVAILABLE, "down")}, cl, "")
	review := func(kind, group string, op admissionv1.Operation, raw, old string) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, Namespace: "batch",
			Operation: op, Object: runtime.RawExtension{Raw: []byte(raw)}, OldObject: runtime.RawExtension{Raw: []byte(old)}}
	}
	// The hold of jobJSON, as kept by an UPDATE that drops the decision.
	var heldJob map[string]any
	admitInto(t, held, review("Job", "batch", admissionv1.Create, jobJSON, ""), &heldJob)
	heldJSON := string(mustMarshal(t, heldJob))
	for _, tc := range []struct {
		name string
		w    *Webhook
		req  *admissionv1.AdmissionRequest
		want []string // paths the patch adds
	}{
		{"held job", held, review("Job", "batch", admissionv1.Create, jobJSON, ""), []string{"/metadata/labels", "/spec/suspend", "/spec/template/spec/affinity"}},
		{"unheld job", down, review("Job", "batch", admissionv1.Create, jobJSON, ""), []string{"/metadata/annotations"}},
		{"held pod", held, review("Pod", "", admissionv1.Create, podJSON, ""), []string{"/spec/schedulingGates/-", "/nodeSelectorTerms/0/matchExpressions", "/nodeSelectorTerms/1/matchExpressions/-"}},
		{"update", held, review("Job", "batch", admissionv1.Update, jobJSON, heldJSON), []string{"/metadata/labels", "/metadata/annotations"}},
	} {
		var in, got map[string]any
		if err := json.Unmarshal(tc.req.Object.Raw, &in); err != nil {
			t.Fatal(err)
		}
		r := admitInto(t, tc.w, tc.req, &got)
		if !r.Allowed || r.Patch == nil {
			t.Fatalf("%s: allowed=%v patch=%s, want a patch", tc.name, r.Allowed, r.Patch)
		}
		for _, o := range decodePatch(t, r) {
			if o["op"] != "add" {
				t.Errorf("%s: operation %v, want only adds", tc.name, o)
			}
		}
		for _, p := range tc.want {
			if !strings.Contains(string(r.Patch), p+`","value"`) {
				t.Errorf("%s: patch %s, want an add at …%s", tc.name, r.Patch, p)
			}
		}
		if msg := subset(in, got, ""); msg != "" {
			t.Errorf("%s: %s (patch %s)", tc.name, msg, r.Patch)
		}
		if _, ok := got["status"]; ok {
			t.Errorf("%s: status added", tc.name)
		}
	}
}

// subset says where a is not kept in b: every member of an object of a is
// in b with the same value, recursively; arrays may only grow.
func subset(a, b any, at string) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return at + ": not an object any more"
		}
		for k, v := range av {
			if v == nil {
				continue // null may become a value
			}
			if msg := subset(v, bv[k], at+"/"+k); msg != "" {
				return msg
			}
		}
	case []any:
		bv, ok := b.([]any)
		if !ok || len(bv) < len(av) {
			return at + ": array shrank or changed type"
		}
		for i := range av {
			if msg := subset(av[i], bv[i], fmt.Sprintf("%s/%d", at, i)); msg != "" {
				return msg
			}
		}
	default:
		if a != b {
			return fmt.Sprintf("%s: %v became %v", at, a, b)
		}
	}
	return ""
}
