package admission

import (
	"maps"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// threeRegions is a cluster with nodes in NL, GB and DE.
func threeRegions() fakeCluster {
	return fakeCluster{regions: []string{"westeurope", "uksouth", "germanywc"}, ns: optedIn()}
}

// TestJobCandidates: a Job held in one of several zones records them,
// each with the region it pins to, under its signature; a Pod, whose
// pinning cannot be replaced while gated, and a Job with one zone do not.
func TestJobCandidates(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, threeRegions(), "")
	held := heldJob(t, w)
	cs, ok, err := hold.ParseCandidates(held.Annotations)
	if err != nil || !ok {
		t.Fatalf("candidates %q: %v %v", held.Annotations[hold.AnnotationCandidates], ok, err)
	}
	want := []hold.Candidate{{Zone: "DE", Region: "germanywc"}, {Zone: "GB", Region: "uksouth"}, {Zone: "NL", Region: "westeurope"}}
	if len(cs) != len(want) {
		t.Fatalf("candidates %v, want %v", cs, want)
	}
	for i := range want {
		if cs[i] != want[i] {
			t.Errorf("candidate %d = %v, want %v", i, cs[i], want[i])
		}
	}
	a := maps.Clone(held.Annotations)
	if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: "train"}, a); err != nil {
		t.Fatalf("signature: %v", err)
	}
	a[hold.AnnotationCandidates] = hold.FormatCandidates(append(cs, hold.Candidate{Zone: "US-MIDA-PJM", Region: "eastus"}))
	if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: "train"}, a); err == nil {
		t.Error("a candidate added still verifies")
	}

	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "batch"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	var gotPod corev1.Pod
	admitInto(t, w, workloadRequest(t, admissionv1.Create, pod, nil), &gotPod)
	if gotPod.Labels[hold.Label] != hold.Held || gotPod.Annotations[hold.AnnotationRegion] != "westeurope" {
		t.Fatalf("pod not held in westeurope: %v %v", gotPod.Labels, gotPod.Annotations)
	}
	if v, ok := gotPod.Annotations[hold.AnnotationCandidates]; ok {
		t.Errorf("a Pod records candidates %s: its node affinity may only be narrowed", v)
	}

	one := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, fakeCluster{regions: []string{"westeurope"}, ns: optedIn()}, "")
	if v, ok := heldJob(t, one).Annotations[hold.AnnotationCandidates]; ok {
		t.Errorf("a Job with one candidate zone records %s", v)
	}
}

// movedJob is held moved by the controller to uksouth (GB) at a new start:
// its decision re-signed for name, its pinning changed.
func movedJob(held *batchv1.Job, name string) *batchv1.Job {
	j := held.DeepCopy()
	j.Annotations[hold.AnnotationZone], j.Annotations[hold.AnnotationRegion] = "GB", "uksouth"
	j.Annotations[hold.AnnotationStart] = "2021-06-01T07:00:00Z"
	j.Annotations[hold.AnnotationSignature] = testSigner.Sign(hold.Subject{Kind: "Job", Namespace: "batch", Name: name}, j.Annotations)
	for i := range j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		term := &j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		term.MatchExpressions[len(term.MatchExpressions)-1].Values = []string{"uksouth"}
	}
	return j
}

// TestUpdateKeepsTheControllersPlaceMove: a held Job the controller moved
// to another candidate zone, re-signed, keeps its new place and time (and
// its new pinning: the webhook leaves the template alone on UPDATE); the
// same move signed for another Job, or with the candidates edited, is put
// back.
func TestUpdateKeepsTheControllersPlaceMove(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, threeRegions(), "")
	held := heldJob(t, w)
	forgedCandidates := movedJob(held, "train")
	forgedCandidates.Annotations[hold.AnnotationCandidates] = hold.FormatCandidates([]hold.Candidate{{Zone: "GB", Region: "uksouth"}, {Zone: "US-MIDA-PJM", Region: "eastus"}})
	for _, tc := range []struct {
		name       string
		up         *batchv1.Job
		wantRegion string
	}{
		{"signed by the controller", movedJob(held, "train"), "uksouth"},
		{"signed for another Job", movedJob(held, "other"), "westeurope"},
		{"the candidates edited", forgedCandidates, "westeurope"},
	} {
		var got batchv1.Job
		if r := admitInto(t, w, workloadRequest(t, admissionv1.Update, tc.up, held), &got); !r.Allowed {
			t.Fatalf("%s: denied %+v", tc.name, r.Result)
		}
		if got.Annotations[hold.AnnotationRegion] != tc.wantRegion {
			t.Errorf("%s: region %q, want %q", tc.name, got.Annotations[hold.AnnotationRegion], tc.wantRegion)
		}
		if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: "train"}, got.Annotations); err != nil {
			t.Errorf("%s: the decision kept does not verify: %v", tc.name, err)
		}
		if got.Annotations[hold.AnnotationCandidates] != held.Annotations[hold.AnnotationCandidates] {
			t.Errorf("%s: candidates %s, want the webhook's", tc.name, got.Annotations[hold.AnnotationCandidates])
		}
	}
	var got batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Update, movedJob(held, "train"), held), &got)
	for _, term := range got.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if last := term.MatchExpressions[len(term.MatchExpressions)-1]; last.Values[0] != "uksouth" {
			t.Errorf("pinning %+v after the move, want region In [uksouth]", term.MatchExpressions)
		}
	}
}

// TestBindingPlaceMoved: a held binding records its candidate zones with
// their member clusters, signed; a binding the controller moved to
// another member, re-signed, keeps it and is narrowed to it even when its
// placement was rewritten meanwhile (Karmada's detector); unsigned, the
// old member and narrowing are put back.
func TestBindingPlaceMoved(t *testing.T) {
	t.Parallel()
	w, got := heldBinding(t)
	held := got.Metadata.Annotations
	cs, ok, err := hold.ParseCandidates(held)
	if err != nil || !ok || len(cs) != 3 {
		t.Fatalf("candidates %q: %v %v, want three", held[hold.AnnotationCandidates], ok, err)
	}
	if c, _ := hold.Find(cs, "GB", "web/api-deployment", hold.Candidate{}); c.Cluster != "m3" || c.Region != "eu-west-2" {
		t.Fatalf("GB's candidate %+v, want m3 in eu-west-2", c)
	}
	subject := hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}
	if err := testSigner.Verify(subject, held); err != nil {
		t.Fatalf("signature: %v", err)
	}
	for _, c := range []struct {
		name        string
		sign        bool
		wantCluster string
	}{
		{"re-signed", true, "m3"},
		{"unsigned", false, "m2"},
	} {
		a := maps.Clone(held)
		a[AnnotationCluster], a[hold.AnnotationZone], a[hold.AnnotationRegion] = "m3", "GB", "eu-west-2"
		if c.sign {
			a[hold.AnnotationSignature] = testSigner.Sign(subject, a)
		}
		old := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, held)
		old["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
		// The placement as Karmada's detector rewrites it from the policy.
		upd := bindingObject(t, "web", "api", threeMembers, a)
		upd["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
		var after placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &after)
		if cl := after.Metadata.Annotations[AnnotationCluster]; cl != c.wantCluster {
			t.Errorf("%s: cluster %s, want %s", c.name, cl, c.wantCluster)
		}
		if names := after.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != c.wantCluster {
			t.Errorf("%s: clusterNames %v, want [%s]", c.name, names, c.wantCluster)
		}
		if err := testSigner.Verify(subject, after.Metadata.Annotations); err != nil {
			t.Errorf("%s: the decision kept does not verify: %v", c.name, err)
		}
	}
}

// TestBindingCandidatesUndivided: a binding placed but not held (no
// Bindings.Hold) records its candidates too, for a failover (failover.go);
// one with Divided replicas (weights over several members) records none:
// nothing ever moves its place.
func TestBindingCandidatesUndivided(t *testing.T) {
	t.Parallel()
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339)}
	fed := fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}}
	for _, c := range []struct {
		name, placement string
		hold, want      bool
	}{
		{"not held", threeMembers, false, true},
		{"divided", dividedPlacement(""), true, false},
	} {
		w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, Bindings{Federation: fed, Hold: c.hold})
		var got placed
		admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", c.placement, nil), nil), &got)
		if got.Metadata.Annotations[AnnotationCluster] == "" {
			t.Fatalf("%s: not placed: %v", c.name, got.Metadata.Annotations)
		}
		if v, ok := got.Metadata.Annotations[hold.AnnotationCandidates]; ok != c.want {
			t.Errorf("%s: candidates %q recorded %v, want %v", c.name, v, ok, c.want)
		}
	}
}
