package controller

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// memberCluster is a Karmada Cluster, Ready or not, with taints.
func memberCluster(name string, ready bool, taints ...any) *unstructured.Unstructured {
	c := newCluster()
	c.SetName(name)
	status := map[bool]string{true: "True", false: "False"}[ready]
	c.Object["spec"] = map[string]any{"taints": taints}
	c.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status}}}
	return c
}

// releaseMembers reconciles binding ns/w held in c at start with a
// binding releaser over a gateway ranking NL (400), GB (500), DE (600)
// gCO2eq/kWh, and returns it with its events.
func releaseMembers(t *testing.T, c client.Client, start time.Time) (*releaser, *record.FakeRecorder) {
	t.Helper()
	rec := record.NewFakeRecorder(10)
	r := bindingReleaser(0)
	r.deps = deps{client: c, nodes: c, clock: fixedClock(start), events: rec, metrics: newMetrics(nil), log: slog.New(slog.DiscardHandler), signer: placeSigner}
	r.redecider = &redecider{sched: &meanScheduler{means: map[forecast.Zone]float64{"NL": 400, "GB": 500, "DE": 600}},
		gain: DefaultRedecideGain, timeout: time.Second, asked: map[string]time.Time{}}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "w"}}); err != nil {
		t.Fatal(err)
	}
	return r, rec
}

// TestMoveOffUnavailableMember: a binding held in member m1 (NL, the
// cleanest by the forecast), whose member is not Ready at its release,
// is moved to the cleanest candidate that can take it — m2 (DE), as m3
// (GB, cleaner) is tainted NoSchedule — and released there in the same
// pass, its decision re-signed for its time, its promise moved by the
// difference (NL 500 → DE 700 gCO2eq/kWh at 10:00, 1 kW for 1 h: 200 g
// less), a MovedOff warning saying why; no candidate able to take it, it
// is released where it was decided with the Unplaceable warning; a
// member that can take it is left alone.
func TestMoveOffUnavailableMember(t *testing.T) {
	t.Parallel()
	maintenance := map[string]any{"key": "example.com/maintenance", "effect": "NoSchedule"}
	for _, tc := range []struct {
		name                 string
		m1, m2               bool // Ready
		wantCluster, wantAvd string
		wantEvent            string
	}{
		{"decided member down", false, true, "m2", "225.0", "MovedOff"},
		{"every candidate down or tainted", false, false, "m1", "425.0", "Unplaceable"},
		{"decided member up", true, true, "m1", "425.0", "Released"},
	} {
		d, a := heldAnnotations("resourcebinding", true, true)
		a[hold.AnnotationPowerWatts], a[hold.AnnotationAvoidedGrams] = "1000", "425.0"
		a[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: "resourcebinding", Namespace: "ns", Name: "w"}, a)
		b := heldBinding(a, map[string]any{"suspension": map[string]any{"scheduling": true},
			"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"m1"}}}})
		c := newFake().WithObjects(b, memberCluster("m1", tc.m1), memberCluster("m2", tc.m2), memberCluster("m3", true, maintenance)).Build()
		r, rec := releaseMembers(t, c, d.Start)
		got := newBinding()
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "w"}, got); err != nil {
			t.Fatal(err)
		}
		ga := got.GetAnnotations()
		names, _, _ := unstructured.NestedStringSlice(got.Object, clusterNamesPath...)
		if got.GetLabels()[hold.Label] != hold.Released || r.held(got) || !slices.Equal(names, []string{tc.wantCluster}) ||
			ga[hold.AnnotationCluster] != tc.wantCluster || ga[hold.AnnotationAvoidedGrams] != tc.wantAvd || ga[hold.AnnotationStart] != a[hold.AnnotationStart] {
			t.Errorf("%s: label %s held %v, clusterNames %v, cluster %s, avoided %s g, start %s; want released in %s, %s g, at %s",
				tc.name, got.GetLabels()[hold.Label], r.held(got), names, ga[hold.AnnotationCluster], ga[hold.AnnotationAvoidedGrams], ga[hold.AnnotationStart],
				tc.wantCluster, tc.wantAvd, a[hold.AnnotationStart])
		}
		if err := placeSigner.Verify(subjectOf(r.kind, got), ga); err != nil {
			t.Errorf("%s: the decision after: %v", tc.name, err)
		}
		close(rec.Events)
		var events []string
		for e := range rec.Events {
			events = append(events, e)
		}
		joined := strings.Join(events, "\n")
		if !strings.Contains(joined, " "+tc.wantEvent+" ") {
			t.Errorf("%s: events %q, want a %s", tc.name, events, tc.wantEvent)
		}
		moved := testutil.ToFloat64(r.metrics.redecisions.WithLabelValues("resourcebinding", "moved", moveUnavailable))
		if (tc.wantEvent == "MovedOff") != (moved == 1) || strings.Contains(joined, "Unplaceable") != (tc.wantEvent == "Unplaceable") {
			t.Errorf("%s: %v moved off, events %q", tc.name, moved, events)
		}
		if tc.wantEvent == "MovedOff" && !strings.Contains(joined, "m1: not Ready") || strings.Contains(joined, "MovedOff") && !strings.Contains(joined, "DE (member cluster m2)") {
			t.Errorf("%s: events %q, want the MovedOff warning to name m1 not Ready and DE in m2", tc.name, events)
		}
	}
}

// TestMoveOffUnavailableRegion: a held Job with candidates, pinned to
// westeurope (NL) whose only node is NotReady at its release, is moved to
// the cleanest candidate region with a node that can take its pods —
// uksouth (GB), germanywc (DE) having none — its pinning with it, and
// released there in the same pass.
func TestMoveOffUnavailableRegion(t *testing.T) {
	t.Parallel()
	d, a := heldAnnotations("job", true, false)
	a[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: "job", Namespace: "ns", Name: "w"}, a)
	node := func(name, region string, taints ...corev1.Taint) *corev1.Node { // one the Job's own affinity (disk in ssd) takes
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hold.RegionLabel: region, "disk": "ssd"}}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	c := newFake().WithObjects(pinnedJob(a), node("we", "westeurope", corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}),
		node("uk", "uksouth")).Build()
	rec := record.NewFakeRecorder(10)
	r := jobReleaser()
	r.deps = deps{client: c, nodes: c, clock: fixedClock(d.Start), events: rec, metrics: newMetrics(nil), log: slog.New(slog.DiscardHandler), signer: placeSigner}
	r.redecider = &redecider{sched: &meanScheduler{means: map[forecast.Zone]float64{"NL": 400, "GB": 500, "DE": 450}},
		gain: DefaultRedecideGain, timeout: time.Second, asked: map[string]time.Time{}}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "w"}}); err != nil {
		t.Fatal(err)
	}
	var got batchv1.Job
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "w"}, &got); err != nil {
		t.Fatal(err)
	}
	terms := requiredTerms(&got.Spec.Template.Spec)
	if got.Labels[hold.Label] != hold.Released || *got.Spec.Suspend || got.Annotations[hold.AnnotationZone] != "GB" || got.Annotations[hold.AnnotationRegion] != "uksouth" ||
		len(terms) != 2 || !pinnedLast(terms[0], "uksouth") || !pinnedLast(terms[1], "uksouth") {
		t.Errorf("after: label %s suspend %v zone %s region %s terms %v; want released in GB, uksouth",
			got.Labels[hold.Label], *got.Spec.Suspend, got.Annotations[hold.AnnotationZone], got.Annotations[hold.AnnotationRegion], terms)
	}
	if err := placeSigner.Verify(subjectOf(r.kind, &got), got.Annotations); err != nil {
		t.Errorf("the decision after: %v", err)
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	if len(events) != 2 || !strings.Contains(events[0], "MovedOff no node of region westeurope can take its pods now (we: taint node.kubernetes.io/not-ready:NoSchedule)") ||
		!strings.Contains(events[0], "GB (uksouth)") || !strings.Contains(events[1], "Released") {
		t.Errorf("events %q, want MovedOff to GB (uksouth), then Released", events)
	}
}

// TestMoveOffWithinZone: a binding held in m1 whose zone (NL, the
// cleanest) has a second candidate member, m7, is moved there when m1 is
// not Ready at its release: the same zone, so its decision's zone and its
// promise stay; and a binding held in m7 is recognised as pinned there
// (its place is m7's, not m1's: a re-decision keeping NL keeps m7).
func TestMoveOffWithinZone(t *testing.T) {
	t.Parallel()
	d, a := heldAnnotations(hold.BindingKind, false, true)
	cs := append(slices.Clone(threeZones), hold.Candidate{Zone: "NL", Region: "westeurope", Cluster: "m7"})
	a[hold.AnnotationCandidates] = hold.FormatCandidates(cs)
	a[hold.AnnotationPowerWatts], a[hold.AnnotationAvoidedGrams] = "1000", "425.0"
	a[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: hold.BindingKind, Namespace: "ns", Name: "w"}, a)
	b := heldBinding(a, map[string]any{"suspension": map[string]any{"scheduling": true},
		"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"m1"}}}})
	c := newFake().WithObjects(b, memberCluster("m1", false), memberCluster("m2", true), memberCluster("m3", true), memberCluster("m7", true)).Build()
	r, _ := releaseMembers(t, c, d.Start)
	got := newBinding()
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "w"}, got); err != nil {
		t.Fatal(err)
	}
	ga := got.GetAnnotations()
	names, _, _ := unstructured.NestedStringSlice(got.Object, clusterNamesPath...)
	if got.GetLabels()[hold.Label] != hold.Released || !slices.Equal(names, []string{"m7"}) || ga[hold.AnnotationCluster] != "m7" ||
		ga[hold.AnnotationZone] != "NL" || ga[hold.AnnotationAvoidedGrams] != "425.0" {
		t.Errorf("label %s, clusterNames %v, cluster %s, zone %s, avoided %s g; want released in m7, NL, 425.0 g",
			got.GetLabels()[hold.Label], names, ga[hold.AnnotationCluster], ga[hold.AnnotationZone], ga[hold.AnnotationAvoidedGrams])
	}
	if err := placeSigner.Verify(subjectOf(r.kind, got), ga); err != nil {
		t.Errorf("the decision after: %v", err)
	}

	pinned := maps.Clone(a)
	pinned[hold.AnnotationCluster] = "m7"
	pinned[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: hold.BindingKind, Namespace: "ns", Name: "w"}, pinned)
	pb := heldBinding(pinned, map[string]any{"suspension": map[string]any{"scheduling": true},
		"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"m7"}}}})
	if pl := r.places(pb, d); pl.from.Cluster != "m7" || len(pl.candidates) != 4 {
		t.Errorf("places of a binding held in m7: from %+v, %d candidates; want m7 among 4", pl.from, len(pl.candidates))
	}
}
