package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// modeNamespaces: shadow (the mode label alone opts it in), enforced
// (opted in, mode enforce), optedin (no mode label: the default) and
// garbage (an unknown mode: the default, with a warning).
func modeNamespaces() map[string][2]map[string]string {
	return map[string][2]map[string]string{
		"shadow":   {{hold.NamespaceModeLabel: hold.ModeShadow}, nil},
		"enforced": {{hold.NamespaceLabel: hold.NamespaceEnabled, hold.NamespaceModeLabel: hold.ModeEnforce}, nil},
		"optedin":  {{hold.NamespaceLabel: hold.NamespaceEnabled}, nil},
		"garbage":  {{hold.NamespaceLabel: hold.NamespaceEnabled, hold.NamespaceModeLabel: "dry-run"}, nil},
	}
}

func shadowHook(t testing.TB, fs *fakeScheduler, shadowDefault bool) *Webhook {
	t.Helper()
	w, err := New(Config{Scheduler: fs, Data: world(), Workloads: Workloads{Shadow: shadowDefault,
		Cluster: fakeCluster{regions: []string{"westeurope", "germanyn"}, ns: modeNamespaces()}, Now: func() time.Time { return now }, Signer: testSigner}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// checkShadow checks a Job admitted in shadow: run as submitted (not
// suspended, labelled shadow, not held, no affinity) with the decision
// annotations and the shadow marker.
func checkShadow(t *testing.T, what string, got *batchv1.Job) {
	t.Helper()
	if (got.Spec.Suspend != nil && *got.Spec.Suspend) || got.Labels[hold.Label] != hold.Shadow || got.Spec.Template.Spec.Affinity != nil {
		t.Errorf("%s: suspend=%v labels=%v affinity=%+v, want the Job as submitted", what, got.Spec.Suspend, got.Labels, got.Spec.Template.Spec.Affinity)
	}
	if got.Annotations[hold.AnnotationShadow] != "true" {
		t.Errorf("%s: annotations %v, want %s=true", what, got.Annotations, hold.AnnotationShadow)
	}
	d, err := hold.Parse(got.Annotations)
	if err != nil || d.Region != "germanyn" || got.Annotations[AnnotationProvenance] == "" || got.Annotations[hold.AnnotationAvoidedGrams] != "22.5" {
		t.Errorf("%s: decision %+v (%v), annotations %v, want germanyn with provenance and 22.5 g", what, d, err, got.Annotations)
	}
}

func TestShadowNamespace(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := shadowHook(t, fs, false)
	a := map[string]string{hold.AnnotationDuration: "PT3H", hold.AnnotationPowerWatts: "400"}
	var got batchv1.Job
	r := admitInto(t, w, workloadRequest(t, admissionv1.Create, job("shadow", a, false), nil), &got)
	if !r.Allowed {
		t.Fatalf("denied: %+v", r.Result)
	}
	checkShadow(t, "shadow namespace", &got)
	var held batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, job("optedin", a, false), nil), &held)
	if held.Labels[hold.Label] != hold.Held || held.Annotations[hold.AnnotationShadow] != "" {
		t.Errorf("opted-in namespace, enforce by default: labels %v annotations %v, want held, no shadow marker", held.Labels, held.Annotations)
	}
	if n := testutil.ToFloat64(w.wl.decisions.WithLabelValues("job", hold.ModeShadow, OutcomeDecided, "shadow")); n != 1 {
		t.Errorf("shadow decisions %v, want 1", n)
	}
	if n := testutil.ToFloat64(w.wl.decisions.WithLabelValues("job", hold.ModeEnforce, OutcomeDecided, "optedin")); n != 1 {
		t.Errorf("enforced decisions %v, want 1", n)
	}
	if g := testutil.ToFloat64(w.wl.promised.WithLabelValues(hold.ModeShadow, "shadow")); g != 22.5 {
		t.Errorf("shadow promised %v g, want 22.5", g)
	}
	if g := testutil.ToFloat64(w.wl.promised.WithLabelValues(hold.ModeEnforce, "optedin")); g != 22.5 {
		t.Errorf("enforced promised %v g, want 22.5", g)
	}
}

func TestShadowDefault(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := shadowHook(t, fs, true)
	a := map[string]string{hold.AnnotationDuration: "PT3H", hold.AnnotationPowerWatts: "400"}
	for _, ns := range []string{"optedin", "shadow"} {
		var got batchv1.Job
		admitInto(t, w, workloadRequest(t, admissionv1.Create, job(ns, a, false), nil), &got)
		checkShadow(t, ns+", shadow by default", &got)
	}
	var held batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, job("enforced", a, false), nil), &held)
	if held.Spec.Suspend == nil || !*held.Spec.Suspend || held.Labels[hold.Label] != hold.Held || held.Annotations[hold.AnnotationShadow] != "" {
		t.Errorf("mode enforce over a shadow default: suspend=%v labels=%v annotations=%v, want held", held.Spec.Suspend, held.Labels, held.Annotations)
	}
	var garbage batchv1.Job
	r := admitInto(t, w, workloadRequest(t, admissionv1.Create, job("garbage", a, false), nil), &garbage)
	checkShadow(t, "unknown mode", &garbage)
	if !strings.Contains(strings.Join(r.Warnings, "\n"), hold.NamespaceModeLabel) {
		t.Errorf("unknown mode: warnings %q, want one naming %s", r.Warnings, hold.NamespaceModeLabel)
	}
}

// A shadow Pod keeps no scheduling gate; a shadow workload carbongate
// cannot place is annotated why and marked; dry runs are not counted.
func TestShadowPodAndUnscheduled(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := shadowHook(t, fs, false)
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shadow"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	var got corev1.Pod
	admitInto(t, w, workloadRequest(t, admissionv1.Create, pod, nil), &got)
	if len(got.Spec.SchedulingGates) != 0 || got.Labels[hold.Label] != hold.Shadow || got.Annotations[hold.AnnotationShadow] != "true" || got.Annotations[hold.AnnotationStart] == "" {
		t.Errorf("shadow pod: gates %v labels %v annotations %v, want ungated, annotated", got.Spec.SchedulingGates, got.Labels, got.Annotations)
	}
	late := job("shadow", map[string]string{hold.AnnotationDeadline: now.Add(30 * time.Minute).Format(time.RFC3339)}, false)
	var j batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, late, nil), &j)
	if j.Annotations[AnnotationUnscheduled] == "" || j.Annotations[hold.AnnotationShadow] != "true" || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
		t.Errorf("shadow job that cannot be placed: annotations %v, want unscheduled and marked shadow", j.Annotations)
	}
	req := workloadRequest(t, admissionv1.Create, job("shadow", nil, false), nil)
	req.DryRun = new(true)
	if r := w.Admit(context.Background(), req, "req-2"); !r.Allowed || r.Patch == nil {
		t.Fatalf("dry run: %+v, want the shadow annotations", r)
	}
	if n := testutil.ToFloat64(w.wl.decisions.WithLabelValues("pod", hold.ModeShadow, OutcomeDecided, "shadow")); n != 1 {
		t.Errorf("shadow pod decisions %v, want 1", n)
	}
	if n := testutil.ToFloat64(w.wl.decisions.WithLabelValues("job", hold.ModeShadow, OutcomeUnscheduled, "shadow")); n != 1 {
		t.Errorf("shadow unscheduled decisions %v, want 1", n)
	}
	if n := testutil.ToFloat64(w.wl.decisions.WithLabelValues("job", hold.ModeShadow, OutcomeDecided, "shadow")); n != 0 {
		t.Errorf("decisions of a dry run counted: %v, want 0", n)
	}
}

// shadowed keeps only what annotates and the label, shadow instead of
// held: a patch that holds loses its suspension, gate and pinning.
func TestShadowedKeepsAnnotationsOnly(t *testing.T) {
	t.Parallel()
	o := outcome{allowed: true, patch: []op{
		add("/metadata/labels", map[string]any{}), add("/metadata/labels/carbongate.io~1hold", "held"),
		add("/metadata/annotations", map[string]any{}), add("/metadata/annotations/carbongate.io~1scheduling-zone", "DE"),
		add("/spec/suspend", true), add("/spec/template/spec/affinity", map[string]any{}),
		add("/metadata/annotationsx", "no"),
	}}
	got := shadowed(o).patch
	var paths []string
	for _, x := range got {
		paths = append(paths, x.Path)
	}
	want := "/metadata/labels /metadata/labels/carbongate.io~1hold /metadata/annotations /metadata/annotations/carbongate.io~1scheduling-zone /metadata/annotations/carbongate.io~1shadow"
	if strings.Join(paths, " ") != want {
		t.Fatalf("paths %q, want %q", paths, want)
	}
	if got[1].Value != hold.Shadow {
		t.Errorf("label %v, want %s", got[1].Value, hold.Shadow)
	}
	if d := shadowed(deny(400, "bad")); d.allowed || d.code != 400 {
		t.Fatalf("a denial in shadow: %+v, want it kept", d)
	}
	if a := shadowed(allow()); a.patch != nil {
		t.Fatalf("left alone in shadow: patch %v, want none", a.patch)
	}
}
