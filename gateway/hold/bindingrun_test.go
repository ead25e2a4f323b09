package hold

import (
	"maps"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/forecast"
)

// resourceBinding is a ResourceBinding of kind (apiVersion/kind) with
// replicas scheduled as scheduling, annotated a, with the statuses Karmada
// reflected by member.
func resourceBinding(apiVersion, kind, scheduling string, replicas int64, a map[string]string, statuses map[string]any) *unstructured.Unstructured {
	var agg []any
	for member, s := range statuses {
		agg = append(agg, map[string]any{"clusterName": member, "status": s, "applied": true})
	}
	b := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
		"metadata": map[string]any{"namespace": "batch", "name": "render-job", "creationTimestamp": "2021-06-01T00:30:00Z"},
		"spec": map[string]any{"resource": map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": "batch", "name": "render"},
			"replicas":  replicas,
			"placement": map[string]any{"replicaScheduling": map[string]any{"replicaSchedulingType": scheduling}}},
		"status": map[string]any{"aggregatedStatus": agg},
	}}
	b.SetAnnotations(a)
	return b
}

func TestAccounted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		apiVersion, kind, scheduling string
		replicas                     int64
		want                         bool
	}{
		{"batch/v1", "Job", "Duplicated", 3, true},
		{"batch/v1", "Job", "Divided", 1, true},
		{"batch/v1", "Job", "Divided", 4, false},
		{"apps/v1", "Deployment", "Duplicated", 1, false},
		{"example.com/v1", "Job", "Duplicated", 1, false},
	} {
		b := resourceBinding(c.apiVersion, c.kind, c.scheduling, c.replicas, nil, nil)
		if got := Accounted(b); got != c.want {
			t.Errorf("%s %s %s×%d: accounted %v, want %v", c.apiVersion, c.kind, c.scheduling, c.replicas, got, c.want)
		}
	}
}

// TestBindingWorkload: a binding's run is its Job's in the member it was
// placed in, as Karmada reflects it; another member's status (a copy left
// by an eviction) is not read; its decision and power are the binding's.
func TestBindingWorkload(t *testing.T) {
	t.Parallel()
	a := map[string]string{AnnotationZone: "SE", AnnotationBaselineZone: "DE", AnnotationCluster: "member-se",
		AnnotationPowerWatts: "500", AnnotationAvoidedGrams: "120.5"}
	done := map[string]any{"startTime": "2021-06-01T02:00:05Z", "completionTime": "2021-06-01T03:10:00Z", "succeeded": int64(1)}
	other := map[string]any{"startTime": "2021-06-01T01:00:00Z"}
	w, err := BindingWorkload(resourceBinding("batch/v1", "Job", "Duplicated", 1, a, map[string]any{"member-se": done, "member-de": other}), forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	if w.Kind != BindingKind || w.Namespace != "batch" || w.Name != "render-job" || w.Zone != "SE" || w.BaselineZone != "DE" ||
		w.PowerWatts != 500 || w.PowerEstimated || !w.HasPromise || w.PromisedGrams != 120.5 {
		t.Fatalf("workload %+v", w)
	}
	if !w.AdmittedAt.Equal(at("2021-06-01T00:30:00Z")) || !w.Started.Equal(at("2021-06-01T02:00:05Z")) || !w.Ended.Equal(at("2021-06-01T03:10:00Z")) {
		t.Fatalf("admitted %v, ran %v–%v: want the binding's creation and the member's run", w.AdmittedAt, w.Started, w.Ended)
	}
	// Not dispatched yet: no run.
	w, err = BindingWorkload(resourceBinding("batch/v1", "Job", "Duplicated", 1, a, nil), forecast.SignalLifecycle)
	if err != nil || !w.Started.IsZero() || !w.Ended.IsZero() {
		t.Fatalf("unstarted: %+v, %v", w, err)
	}
	// A bad zone is named.
	a[AnnotationZone] = "not a zone"
	if _, err := BindingWorkload(resourceBinding("batch/v1", "Job", "Duplicated", 1, a, nil), forecast.SignalLifecycle); err == nil {
		t.Fatal("a bad zone was read")
	}
}

// TestShadowBindingWorkload: a binding decided in shadow ran where its
// policy placed it: its run is the Job's in that member, and running at
// once (the shadow ledger's baseline) is charged in that member's zone, a
// candidate of the decision; in several members at once it is not
// accounted, and in a member of unknown zone it says so.
func TestShadowBindingWorkload(t *testing.T) {
	t.Parallel()
	a := map[string]string{AnnotationZone: "SE", AnnotationBaselineZone: "DE", AnnotationCluster: "member-se", AnnotationShadow: "true",
		AnnotationPowerWatts: "500", AnnotationStart: "2021-06-01T05:00:00Z", AnnotationReleaseBy: "2021-06-01T08:00:00Z",
		AnnotationCandidates: FormatCandidates([]Candidate{{Zone: "SE", Cluster: "member-se"}, {Zone: "PL", Cluster: "member-pl"}})}
	run := map[string]any{"startTime": "2021-06-01T01:00:00Z", "completionTime": "2021-06-01T02:00:00Z"}
	b := resourceBinding("batch/v1", "Job", "Duplicated", 1, a, map[string]any{"member-pl": run})
	b.Object["spec"].(map[string]any)["clusters"] = []any{map[string]any{"name": "member-pl"}}
	if !Accounted(b) {
		t.Fatal("a shadow binding run in one member is not accounted")
	}
	w, err := BindingWorkload(b, forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	if w.BaselineZone != "PL" || w.Zone != "SE" || w.Started.IsZero() || w.Ended.Sub(w.Started) != time.Hour {
		t.Fatalf("workload %+v: want its run in member-pl, charged against PL", w)
	}
	b.Object["spec"].(map[string]any)["clusters"] = []any{map[string]any{"name": "member-xx"}}
	if _, err := BindingWorkload(b, forecast.SignalLifecycle); err == nil {
		t.Error("a run in a member of unknown zone was read")
	}
	b.Object["spec"].(map[string]any)["clusters"] = []any{map[string]any{"name": "member-pl"}, map[string]any{"name": "member-se"}}
	if Accounted(b) {
		t.Error("a shadow binding run in two members is accounted")
	}
}

// TestBindingRanElsewhere: a held binding Karmada scheduled to another
// candidate than the decided member (a later group of clusterAffinities)
// is charged where it ran (also another member of the decided zone); a
// shadow binding its policy put in the decided
// member ran as submitted there, its baseline; a member whose zone the
// decision did not record is not accounted, and says so.
func TestBindingRanElsewhere(t *testing.T) {
	t.Parallel()
	a := map[string]string{AnnotationZone: "SE", AnnotationBaselineZone: "DE", AnnotationCluster: "member-se", AnnotationPowerWatts: "500",
		AnnotationStart: "2021-06-01T05:00:00Z", AnnotationReleaseBy: "2021-06-01T08:00:00Z",
		AnnotationCandidates: FormatCandidates([]Candidate{{Zone: "SE", Cluster: "member-se"}, {Zone: "PL", Cluster: "member-pl"}})}
	run := map[string]any{"startTime": "2021-06-01T05:00:00Z", "completionTime": "2021-06-01T06:00:00Z"}
	scheduled := func(a map[string]string, member string) *unstructured.Unstructured {
		b := resourceBinding("batch/v1", "Job", "Duplicated", 1, a, map[string]any{member: run})
		b.Object["spec"].(map[string]any)["clusters"] = []any{map[string]any{"name": member}}
		return b
	}
	w, err := BindingWorkload(scheduled(a, "member-pl"), forecast.SignalLifecycle)
	if err != nil || w.Zone != "PL" || w.BaselineZone != "DE" || w.Started.IsZero() {
		t.Fatalf("held, ran in member-pl: %+v %v; want charged in PL against DE", w, err)
	}
	shadow := maps.Clone(a)
	shadow[AnnotationShadow] = "true"
	w, err = BindingWorkload(scheduled(shadow, "member-se"), forecast.SignalLifecycle)
	if err != nil || w.Zone != "SE" || w.BaselineZone != "SE" {
		t.Fatalf("shadow, ran in the decided member: %+v %v; want its baseline SE", w, err)
	}
	sameZone := maps.Clone(a)
	sameZone[AnnotationCandidates] = FormatCandidates([]Candidate{{Zone: "SE", Cluster: "member-se"}, {Zone: "SE", Cluster: "member-se2"}, {Zone: "PL", Cluster: "member-pl"}})
	w, err = BindingWorkload(scheduled(sameZone, "member-se2"), forecast.SignalLifecycle)
	if err != nil || w.Zone != "SE" || w.BaselineZone != "DE" {
		t.Fatalf("held, ran in the other member of its zone: %+v %v; want charged in SE against DE", w, err)
	}
	b := scheduled(a, "member-xx")
	if why := NotAccounted(b); !strings.Contains(why, "member-xx") {
		t.Errorf("a run in a member of unknown zone: %q", why)
	}
	b.Object["spec"].(map[string]any)["clusters"] = []any{map[string]any{"name": "member-pl"}, map[string]any{"name": "member-se"}}
	if why := NotAccounted(b); !strings.Contains(why, "2 member clusters") {
		t.Errorf("a run in two members: %q", why)
	}
}
