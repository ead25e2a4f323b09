package controller

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold"
)

// meanScheduler answers as a gateway whose forecast in each zone rises by
// 10 gCO2eq/kWh an hour from means at 00:00: the best window is the asked
// zone of the lowest mean, starting at the first whole hour after the
// earliest start — unless that is the window asked for exactly (one hour
// wide), which is answered as asked.
type meanScheduler struct {
	means map[forecast.Zone]float64
	mu    sync.Mutex
	asked [][]forecast.Zone
}

func (s *meanScheduler) Schedule(_ context.Context, req gateway.Request) (gateway.Decision, error) {
	s.mu.Lock()
	s.asked = append(s.asked, req.Zones)
	s.mu.Unlock()
	best := slices.MinFunc(req.Zones, func(a, b forecast.Zone) int { return int(s.means[a] - s.means[b]) })
	start := req.EarliestStart.Truncate(time.Hour).Add(time.Hour)
	if req.Deadline.Sub(req.EarliestStart) == req.Duration {
		start = req.EarliestStart
	}
	mean := s.means[best] + 10*start.Sub(lat(0, 0)).Hours()
	return gateway.Decision{Decision: gateway.Placement{Zone: best, Start: start, End: start.Add(req.Duration), Mean: mean}}, nil
}

var placeSigner, _ = hold.NewSigner([]byte("carbongate controller tests' decision key"))

// threeZones are a held workload's candidates: NL, the held one, worst.
var threeZones = []hold.Candidate{{Zone: "NL", Region: "westeurope", Cluster: "m1"}, {Zone: "GB", Region: "uksouth", Cluster: "m3"}, {Zone: "DE", Region: "germanywc", Cluster: "m2"}}

// heldAnnotations is a decision held in NL at 10:00 for an hour, with
// candidates (for kind, without their clusters unless cluster), signed.
func heldAnnotations(kind string, candidates, cluster bool) (hold.Decision, map[string]string) {
	d := hold.Decision{Region: "westeurope", Zone: "NL", Start: lat(10, 0), ReleaseBy: lat(12, 0)}
	a := d.Annotations()
	a[hold.AnnotationProvenance] = `{"start":"` + lat(10, 0).Format(time.RFC3339) + `","end":"` + lat(11, 0).Format(time.RFC3339) + `"}`
	if candidates {
		cs := slices.Clone(threeZones)
		for i := range cs {
			if !cluster {
				cs[i].Cluster = ""
			}
		}
		a[hold.AnnotationCandidates] = hold.FormatCandidates(cs)
	}
	if cluster {
		a[hold.AnnotationCluster] = "m1"
	}
	a[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: kind, Namespace: "ns", Name: "w"}, a)
	return d, a
}

// redecideOnce re-decides obj, held under d, at 01:10 with r over a
// gateway where GB is best and NL worst; it returns obj as stored after,
// the zones of its widest question (the two are asked at once) and the
// events.
func redecideOnce(t *testing.T, r *releaser, obj client.Object, d hold.Decision) (client.Object, []forecast.Zone, []string) {
	t.Helper()
	c := newFake().WithObjects(obj).Build()
	rec := record.NewFakeRecorder(10)
	s := &meanScheduler{means: map[forecast.Zone]float64{"NL": 400, "GB": 200, "DE": 300}}
	r.deps = deps{client: c, clock: fixedClock(lat(1, 10)), events: rec, metrics: newMetrics(nil), log: slog.New(slog.DiscardHandler), signer: placeSigner}
	r.redecider = &redecider{sched: s, gain: DefaultRedecideGain, timeout: time.Second, asked: map[string]time.Time{}}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	r.redecide(context.Background(), obj, d, lat(1, 10))
	got := r.newObj()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if err := placeSigner.Verify(subjectOf(r.kind, got), got.GetAnnotations()); err != nil {
		t.Errorf("the decision after re-deciding: %v", err)
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	return got, slices.MaxFunc(s.asked, func(a, b []forecast.Zone) int { return len(a) - len(b) }), events
}

// pinnedJob is a held Job whose two required node affinity terms of its
// own the webhook pinned to westeurope.
func pinnedJob(a map[string]string) *batchv1.Job {
	pin := corev1.NodeSelectorRequirement{Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"westeurope"}}
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Labels: map[string]string{hold.Label: hold.Held}, Annotations: a},
		Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}, pin}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}, pin}},
				}}}}}}}}
}

// TestRedecideMovesJobPlace: a held Job with candidates, still pinned as
// the webhook pinned it, is asked over all its candidates and moved to the
// best zone and time in one patch: its decision re-signed and its pinning
// (the last requirement of each term, the user's kept) now the new region;
// without candidates, no longer pinned so, or started, it moves in time
// only.
func TestRedecideMovesJobPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		candidates bool
		edit       func(*batchv1.Job)
		wantZone   string
	}{
		{"candidates", true, func(*batchv1.Job) {}, "GB"},
		{"no candidates (decided before them)", false, func(*batchv1.Job) {}, "NL"},
		{"pinning edited", true, func(j *batchv1.Job) { j.Spec.Template.Spec.Affinity = nil }, "NL"},
		{"started once", true, func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: lat(0, 0)} }, "NL"},
	} {
		d, a := heldAnnotations("job", tc.candidates, false)
		j := pinnedJob(a)
		tc.edit(j)
		r := jobReleaser()
		obj, asked, events := redecideOnce(t, r, j, d)
		got := obj.(*batchv1.Job)
		moved, err := hold.Parse(got.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		if moved.Zone != tc.wantZone || !moved.Start.Equal(lat(2, 0)) || !moved.ReleaseBy.Equal(d.ReleaseBy) {
			t.Errorf("%s: moved to %+v, want %s at 02:00, release-by kept", tc.name, moved, tc.wantZone)
		}
		if wantAsked := map[bool]int{true: 3, false: 1}[tc.wantZone == "GB"]; len(asked) != wantAsked {
			t.Errorf("%s: asked zones %v, want %d", tc.name, asked, wantAsked)
		}
		if len(events) != 1 || !strings.Contains(events[0], "Redecided") {
			t.Errorf("%s: events %v, want one Redecided", tc.name, events)
		}
		if tc.wantZone != "GB" {
			continue
		}
		if moved.Region != "uksouth" || got.Annotations[hold.AnnotationCandidates] != a[hold.AnnotationCandidates] {
			t.Errorf("region %q candidates %s, want uksouth and the webhook's", moved.Region, got.Annotations[hold.AnnotationCandidates])
		}
		for i, term := range requiredTerms(&got.Spec.Template.Spec) {
			if want := pinnedJob(nil).Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i].MatchExpressions[0]; term.MatchExpressions[0].Key != want.Key || len(term.MatchExpressions) != 2 {
				t.Errorf("term %d: %+v, want the user's requirement kept", i, term.MatchExpressions)
			}
			if !pinnedLast(term, "uksouth") {
				t.Errorf("term %d: %+v, want pinned to uksouth", i, term.MatchExpressions)
			}
		}
		if !strings.Contains(events[0], "NL (westeurope)") || !strings.Contains(events[0], "GB (uksouth)") {
			t.Errorf("event %q, want from NL (westeurope) to GB (uksouth)", events[0])
		}
		if n := testutil.ToFloat64(r.metrics.redecisions.WithLabelValues("job", "moved", movePlaceAndTime)); n != 1 {
			t.Errorf("moved place-and-time counted %v, want 1", n)
		}
	}
}

// TestRedecidePodTimeOnly: a Pod's place never moves, even with
// candidates signed (a gated Pod's node affinity may only be narrowed).
func TestRedecidePodTimeOnly(t *testing.T) {
	t.Parallel()
	d, a := heldAnnotations("pod", true, false)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", Labels: map[string]string{hold.Label: hold.Held}, Annotations: a},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: hold.Gate}}}}
	r := podReleaser()
	obj, asked, _ := redecideOnce(t, r, p, d)
	moved, _ := hold.Parse(obj.GetAnnotations())
	if moved.Zone != "NL" || !moved.Start.Equal(lat(2, 0)) || len(asked) != 1 {
		t.Errorf("moved to %+v asking %v, want NL at 02:00 asking NL only", moved, asked)
	}
	if n := testutil.ToFloat64(r.metrics.redecisions.WithLabelValues("pod", "moved", moveTime)); n != 1 {
		t.Errorf("moved time counted %v, want 1", n)
	}
}

// heldBinding is a binding held from scheduling in m1, placed by spec.
func heldBinding(a map[string]string, spec map[string]any) *unstructured.Unstructured {
	b := newBinding()
	b.SetNamespace("ns")
	b.SetName("w")
	b.SetLabels(map[string]string{hold.Label: hold.Held})
	b.SetAnnotations(a)
	b.Object["spec"] = spec
	return b
}

// TestRedecideMovesBindingPlace: a binding held from scheduling, narrowed
// to its member (clusterNames, or carbongate's group in front of the
// policy's), moves to the best candidate's member in one patch with its
// decision; one staged (scheduling released, dispatching held) or already
// scheduled keeps its member and moves in time only.
func TestRedecideMovesBindingPlace(t *testing.T) {
	t.Parallel()
	names := func(ns ...any) map[string]any { return map[string]any{"clusterNames": ns} }
	policyGroup := map[string]any{"affinityName": "prod", "clusterNames": []any{"m1", "m2", "m3"}}
	for _, tc := range []struct {
		name        string
		spec        map[string]any
		wantCluster string
		path        []string // where the member is named after
	}{
		{"clusterNames", map[string]any{"suspension": map[string]any{"scheduling": true},
			"placement": map[string]any{"clusterAffinity": names("m1")}}, "m3", clusterNamesPath},
		{"groups", map[string]any{"suspension": map[string]any{"scheduling": true},
			"placement": map[string]any{"clusterAffinities": []any{map[string]any{"affinityName": hold.AffinityGroup, "clusterNames": []any{"m1"}}, policyGroup}}}, "m3", nil},
		{"staged", map[string]any{"suspension": map[string]any{"scheduling": false, "dispatching": true},
			"placement": map[string]any{"clusterAffinity": names("m1")}, "clusters": []any{map[string]any{"name": "m1"}}}, "m1", clusterNamesPath},
		{"scheduled", map[string]any{"suspension": map[string]any{"scheduling": true},
			"placement": map[string]any{"clusterAffinity": names("m1")}, "clusters": []any{map[string]any{"name": "m1"}}}, "m1", clusterNamesPath},
	} {
		d, a := heldAnnotations(hold.BindingKind, true, true)
		r := bindingReleaser(0)
		obj, _, _ := redecideOnce(t, r, heldBinding(a, tc.spec), d)
		got := obj.(*unstructured.Unstructured)
		if cl := got.GetAnnotations()[hold.AnnotationCluster]; cl != tc.wantCluster {
			t.Errorf("%s: cluster annotation %s, want %s", tc.name, cl, tc.wantCluster)
		}
		if tc.path != nil {
			if ns, _, _ := unstructured.NestedStringSlice(got.Object, tc.path...); !slices.Equal(ns, []string{tc.wantCluster}) {
				t.Errorf("%s: clusterNames %v, want [%s]", tc.name, ns, tc.wantCluster)
			}
			continue
		}
		groups, _, _ := unstructured.NestedSlice(got.Object, groupsPath...)
		if len(groups) != 2 || !slices.Equal(groups[0].(map[string]any)["clusterNames"].([]any), []any{tc.wantCluster}) ||
			len(groups[1].(map[string]any)["clusterNames"].([]any)) != 3 {
			t.Errorf("%s: groups %v, want carbongate's of %s, then the policy's untouched", tc.name, groups, tc.wantCluster)
		}
	}
}
