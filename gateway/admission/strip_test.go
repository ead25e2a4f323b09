package admission

import (
	"context"
	"maps"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// forged are outputs a user writes on a Job to be credited.
func forged() map[string]string {
	return map[string]string{
		hold.AnnotationAvoidedGrams: "+Inf", hold.AnnotationSavingsPct: "99", hold.AnnotationRegion: "westeurope",
		hold.AnnotationZone: "NL", hold.AnnotationStart: "2020-01-01T00:00:00Z", hold.AnnotationReleaseBy: "2020-01-01T00:00:00Z",
		hold.AnnotationSignature: "forged", hold.AnnotationReleasedAt: "2020-01-01T00:00:00Z", hold.AnnotationReleaseReason: hold.ReasonScheduled,
		AnnotationProvenance: "{}", AnnotationUnscheduled: "no", hold.AnnotationBaselineZone: "PL",
		hold.AnnotationRealizedStatus: "realized", hold.AnnotationRealizedCoverage: "1", hold.AnnotationRealizedGrams: "0",
		hold.AnnotationRunAtAdmissionGrams: "1e8", hold.AnnotationRealizedAvoided: "1e8", hold.AnnotationRecordSignature: "forged",
	}
}

// TestCreateStripsForgedOutputs: a Job created with carbongate's label and
// annotations keeps none of them — not in a namespace that did not opt in
// (where it is not held at all), nor in one that did (where the webhook's
// own decision replaces them).
func TestCreateStripsForgedOutputs(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	// Not opted in: everything carbongate's removed, the user's kept.
	in := job("web", forged(), true)
	in.Annotations["team"] = "web"
	in.Labels = map[string]string{hold.Label: hold.Held, "app": "x"}
	var got batchv1.Job
	if r := admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got); !r.Allowed {
		t.Fatalf("denied: %+v", r.Result)
	}
	if want := map[string]string{"team": "web"}; !maps.Equal(got.Annotations, want) {
		t.Errorf("annotations %v, want %v", got.Annotations, want)
	}
	if want := map[string]string{"app": "x"}; !maps.Equal(got.Labels, want) {
		t.Errorf("labels %v, want %v", got.Labels, want)
	}
	// Opted in, 400 W: the webhook's decision, credit and signature.
	in = job("batch", forged(), false)
	in.Annotations[hold.AnnotationPowerWatts] = "400"
	in.Labels = map[string]string{hold.Label: hold.Released}
	got = batchv1.Job{}
	admitInto(t, w, workloadRequest(t, admissionv1.Create, in, nil), &got)
	if got.Labels[hold.Label] != hold.Held {
		t.Fatalf("label %q, want held", got.Labels[hold.Label])
	}
	for _, k := range append([]string{hold.AnnotationReleasedAt, hold.AnnotationReleaseReason, AnnotationUnscheduled}, hold.Record...) {
		if v, ok := got.Annotations[k]; ok {
			t.Errorf("%s=%q kept", k, v)
		}
	}
	if b := got.Annotations[hold.AnnotationBaselineZone]; b != "NL" {
		t.Errorf("baseline zone %q, want the webhook's (NL)", b)
	}
	if g, ok := hold.AvoidedGrams(got.Annotations); !ok || g > 1000 {
		t.Errorf("avoided-g %q, want the webhook's estimate", got.Annotations[hold.AnnotationAvoidedGrams])
	}
	if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: "train"}, got.Annotations); err != nil {
		t.Errorf("the webhook's decision: %v", err)
	}
}

// heldJob is a Job the webhook held in namespace batch.
func heldJob(t *testing.T, w *Webhook) *batchv1.Job {
	t.Helper()
	var held batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, job("batch", map[string]string{hold.AnnotationPowerWatts: "400"}, false), nil), &held)
	if held.Labels[hold.Label] != hold.Held {
		t.Fatalf("not held: %v", held.Labels)
	}
	return &held
}

// TestUpdateRestoresOutputs: an update cannot change the decision of a
// held Job, add one to an unheld Job, or relabel a still suspended Job
// released; the release itself (label released, Job unsuspended, stamp)
// goes through.
func TestUpdateRestoresOutputs(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	held := heldJob(t, w)
	for _, tc := range []struct {
		name string
		edit func(*batchv1.Job)
	}{
		{"start and credit edited", func(j *batchv1.Job) {
			j.Annotations[hold.AnnotationStart] = "2020-01-01T00:00:00Z"
			j.Annotations[hold.AnnotationAvoidedGrams] = "1e308"
		}},
		{"relabelled released, still suspended", func(j *batchv1.Job) {
			j.Labels[hold.Label] = hold.Released
			j.Annotations[hold.AnnotationReleaseReason] = hold.ReasonScheduled
		}},
		{"outputs dropped", func(j *batchv1.Job) { j.Annotations, j.Labels = nil, nil }},
		{"stamp added", func(j *batchv1.Job) { j.Annotations[hold.AnnotationReleasedAt] = "2020-01-01T00:00:00Z" }},
	} {
		up := held.DeepCopy()
		tc.edit(up)
		var got batchv1.Job
		if r := admitInto(t, w, workloadRequest(t, admissionv1.Update, up, held), &got); !r.Allowed {
			t.Fatalf("%s: denied %+v", tc.name, r.Result)
		}
		if !maps.Equal(outputsOf(got.Annotations), outputsOf(held.Annotations)) || !maps.Equal(got.Labels, held.Labels) {
			t.Errorf("%s: labels %v annotations %v, want the held Job's %v %v", tc.name, got.Labels, got.Annotations, held.Labels, held.Annotations)
		}
	}
	// The controller's release.
	up := held.DeepCopy()
	up.Spec.Suspend = new(false)
	up.Labels[hold.Label] = hold.Released
	up.Annotations[hold.AnnotationReleasedAt], up.Annotations[hold.AnnotationReleaseReason] = "2021-06-01T03:00:00Z", hold.ReasonScheduled
	var got batchv1.Job
	if r := admitInto(t, w, workloadRequest(t, admissionv1.Update, up, held), &got); !r.Allowed || r.Patch != nil {
		t.Fatalf("release: allowed=%v patch=%s, want admitted unchanged", r.Allowed, r.Patch)
	}
	// An unheld Job cannot be made held by an update.
	var plain batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, job("web", nil, false), nil), &plain)
	forgedUp := plain.DeepCopy()
	forgedUp.Labels = map[string]string{hold.Label: hold.Held}
	forgedUp.Annotations = held.Annotations
	forgedUp.Spec.Suspend = new(true)
	got = batchv1.Job{}
	admitInto(t, w, workloadRequest(t, admissionv1.Update, forgedUp, &plain), &got)
	if len(got.Labels) != 0 || len(outputsOf(got.Annotations)) != 0 {
		t.Errorf("update of an unheld Job: labels %v annotations %v, want none", got.Labels, got.Annotations)
	}
}

// TestUpdateKeepsOnlyTheControllersRecord: the ledger record of a released
// Job goes through an update only when the controller signed it for that
// Job; a forged, edited or copied one is put back as it was.
func TestUpdateKeepsOnlyTheControllersRecord(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	released := heldJob(t, w)
	released.Spec.Suspend = new(false)
	released.Labels[hold.Label] = hold.Released
	released.Annotations[hold.AnnotationReleasedAt], released.Annotations[hold.AnnotationReleaseReason] = "2021-06-01T03:00:00Z", hold.ReasonScheduled
	subject := hold.Subject{Kind: "job", Namespace: "batch", Name: "train"}
	record := func(avoided string) map[string]string {
		a := map[string]string{hold.AnnotationRealizedStatus: "realized", hold.AnnotationRealizedCoverage: "1.0000",
			hold.AnnotationRealizedGrams: "500.00", hold.AnnotationRunAtAdmissionGrams: "1000.00", hold.AnnotationRealizedAvoided: avoided}
		a[hold.AnnotationRecordSignature] = testSigner.SignRecord(subject, a)
		return a
	}
	with := func(j *batchv1.Job, a map[string]string) *batchv1.Job {
		j = j.DeepCopy()
		maps.Copy(j.Annotations, a)
		return j
	}
	update := func(up, old *batchv1.Job) map[string]string {
		t.Helper()
		var got batchv1.Job
		if r := admitInto(t, w, workloadRequest(t, admissionv1.Update, up, old), &got); !r.Allowed {
			t.Fatalf("denied %+v", r.Result)
		}
		return got.Annotations
	}
	good := record("500.00")
	// The controller's record goes through.
	if got := update(with(released, good), released); got[hold.AnnotationRealizedAvoided] != "500.00" || testSigner.VerifyRecord(subject, got) != nil {
		t.Fatalf("the controller's record: %v", got)
	}
	recorded := with(released, good)
	forgedRec := maps.Clone(good)
	forgedRec[hold.AnnotationRealizedAvoided] = "1e8"
	copied := with(released, nil)
	copied.Name = "other"
	for _, tc := range []struct {
		name     string
		up, old  *batchv1.Job
		wantFrom map[string]string // the record wanted after the update
	}{
		{"forged on a released Job", with(released, forged()), released, nil},
		{"grams raised under the controller's signature", with(recorded, forgedRec), recorded, good},
		{"record dropped", with(released, nil), recorded, good},
		{"copied to another Job", with(copied, good), copied, nil},
	} {
		if tc.name == "record dropped" {
			for _, k := range hold.Record {
				delete(tc.up.Annotations, k)
			}
		}
		got := update(tc.up, tc.old)
		for _, k := range hold.Record {
			if got[k] != tc.wantFrom[k] {
				t.Errorf("%s: %s=%q, want %q", tc.name, k, got[k], tc.wantFrom[k])
			}
		}
	}
}

// TestUpdateKeepsTheControllersMove: a held Job whose start the controller
// moved to a newer forecast's, re-signed, keeps it; the same move unsigned,
// or signed for another Job, is put back.
func TestUpdateKeepsTheControllersMove(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	held := heldJob(t, w)
	moved := func(name string) *batchv1.Job {
		j := held.DeepCopy()
		j.Annotations[hold.AnnotationStart] = "2021-06-01T07:00:00Z"
		j.Annotations[hold.AnnotationSignature] = testSigner.Sign(hold.Subject{Kind: "job", Namespace: "batch", Name: name}, j.Annotations)
		return j
	}
	for _, tc := range []struct {
		name, signedFor, want string
	}{
		{"signed by the controller", "train", "2021-06-01T07:00:00Z"},
		{"signed for another Job", "other", held.Annotations[hold.AnnotationStart]},
	} {
		var got batchv1.Job
		admitInto(t, w, workloadRequest(t, admissionv1.Update, moved(tc.signedFor), held), &got)
		if got.Annotations[hold.AnnotationStart] != tc.want {
			t.Errorf("%s: start %q, want %q", tc.name, got.Annotations[hold.AnnotationStart], tc.want)
		}
		if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: "train"}, got.Annotations); err != nil {
			t.Errorf("%s: the decision kept does not verify: %v", tc.name, err)
		}
	}
}

// TestPodReleaseNeedsTheGate: a Pod relabelled released keeps its label
// held while it still carries the gate.
func TestPodReleaseNeedsTheGate(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "render", Namespace: "batch"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	var held corev1.Pod
	admitInto(t, w, workloadRequest(t, admissionv1.Create, p, nil), &held)
	up := held.DeepCopy()
	up.Labels[hold.Label] = hold.Released
	var got corev1.Pod
	admitInto(t, w, workloadRequest(t, admissionv1.Update, up, &held), &got)
	if got.Labels[hold.Label] != hold.Held {
		t.Errorf("gated Pod relabelled: label %q, want held", got.Labels[hold.Label])
	}
	up.Spec.SchedulingGates = nil
	got = corev1.Pod{}
	admitInto(t, w, workloadRequest(t, admissionv1.Update, up, &held), &got)
	if got.Labels[hold.Label] != hold.Released {
		t.Errorf("ungated Pod relabelled: label %q, want released", got.Labels[hold.Label])
	}
}

// TestStripDeniedStaysDenied: a create the decision denies is denied with
// no patch, forged outputs or not.
func TestStripDeniedStaysDenied(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	a := forged()
	a[hold.AnnotationDuration] = "banana"
	r := w.Admit(context.Background(), workloadRequest(t, admissionv1.Create, job("batch", a, false), nil), "r")
	if r.Allowed || r.Patch != nil {
		t.Fatalf("allowed=%v patch=%s, want denied without a patch", r.Allowed, r.Patch)
	}
}

// outputsOf returns the carbongate outputs among annotations a.
func outputsOf(a map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range slices.Concat(hold.Outputs, hold.ReleaseStamp, hold.Record) {
		if v, ok := a[k]; ok {
			out[k] = v
		}
	}
	return out
}
