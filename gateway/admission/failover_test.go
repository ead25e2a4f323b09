package admission

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// TestFailover: a placed binding Karmada evicts from its member (a graceful
// eviction task from it, after which Karmada's scheduler filters the member
// out) is narrowed, on that update, to the candidate of lowest forecast
// that is not evicted and can take it now — its decision moved there,
// re-signed, the member it left recorded — and stays there on the next
// update; an eviction from another member, a binding without recorded
// candidates, or none able to take it: narrowed to its member as before.
func TestFailover(t *testing.T) {
	t.Parallel()
	wl := map[string]map[string]string{"web/api": {hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}}
	subject := hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}
	narrowed := `{"clusterAffinity":{"clusterNames":["m1"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`
	for _, c := range []struct {
		name       string
		evicted    []string // the binding's graceful eviction tasks
		down       bool     // m3 not Ready
		candidates bool     // recorded at admission
		want       string   // the cluster after the update
	}{
		{"evicted from its member", []string{"m1"}, false, true, "m3"},
		{"the next cleanest not Ready", []string{"m1"}, true, true, "m2"},
		{"the next cleanest evicted too", []string{"m1", "m3"}, false, true, "m2"},
		{"evicted from another member", []string{"m3"}, false, true, "m1"},
		{"no candidates recorded", []string{"m1"}, false, false, "m1"},
	} {
		fed := fakeFederation{workloads: wl}
		w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL", "GB", "DE"}}, Bindings{Federation: fed})
		var created placed
		admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), &created)
		a := created.Metadata.Annotations
		if a[AnnotationCluster] != "m1" || a[hold.AnnotationCandidates] == "" {
			t.Fatalf("%s: created in %q with candidates %q, want m1 with its candidates", c.name, a[AnnotationCluster], a[hold.AnnotationCandidates])
		}
		if !c.candidates { // as a decision made before they were recorded
			delete(a, hold.AnnotationCandidates)
			a[hold.AnnotationSignature] = testSigner.Sign(subject, a)
		}
		if c.down {
			fed.clusters = members()
			fed.clusters[2].Taints = notReady()[1].Taints
		}
		w = newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL", "GB", "DE"}}, Bindings{Federation: fed})
		old := bindingObject(t, "web", "api", narrowed, a)
		upd := bindingObject(t, "web", "api", narrowed, a)
		var tasks []any
		for _, e := range c.evicted {
			tasks = append(tasks, map[string]any{"fromCluster": e, "reason": "TaintUntolerated"})
		}
		upd["spec"].(map[string]any)["gracefulEvictionTasks"] = tasks
		var got placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &got)
		ga := got.Metadata.Annotations
		if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != c.want || ga[AnnotationCluster] != c.want {
			t.Errorf("%s: clusterNames %v, cluster %s; want %s", c.name, names, ga[AnnotationCluster], c.want)
			continue
		}
		if err := testSigner.Verify(subject, ga); err != nil {
			t.Errorf("%s: the decision does not verify: %v", c.name, err)
		}
		moved, waits := testutil.ToFloat64(w.wl.failovers.WithLabelValues("moved")), testutil.ToFloat64(w.wl.failovers.WithLabelValues("waits"))
		if wantMoved, wantWaits := map[bool]float64{true: 1}[c.want != "m1"], map[bool]float64{true: 1}[c.name == "no candidates recorded"]; moved != wantMoved || waits != wantWaits {
			t.Errorf("%s: failovers moved %v, waits %v; want %v, %v", c.name, moved, waits, wantMoved, wantWaits)
		}
		if c.want == "m1" {
			if ga[AnnotationEvictedFrom] != "" {
				t.Errorf("%s: evicted-from %q on a binding left in place", c.name, ga[AnnotationEvictedFrom])
			}
			continue
		}
		d, err := hold.Parse(ga)
		if want := map[string]string{"m2": "DE", "m3": "GB"}[c.want]; err != nil || d.Zone != want || ga[AnnotationEvictedFrom] != "m1" || ga[hold.AnnotationStart] != a[hold.AnnotationStart] {
			t.Errorf("%s: decision %+v (%v), evicted-from %q; want zone %s, evicted from m1, its start kept", c.name, d, err, ga[AnnotationEvictedFrom], want)
		}
		// Karmada's next update (the eviction task still there) keeps it
		// where it moved; a client cannot forge where it was evicted from.
		forged := maps.Clone(ga)
		forged[AnnotationEvictedFrom] = "m9"
		next := bindingObject(t, "web", "api", threeMembers, forged)
		next["spec"].(map[string]any)["gracefulEvictionTasks"] = tasks
		var again placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, next, bindingObject(t, "web", "api", narrowed, ga)), &again)
		if names := again.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != c.want || again.Metadata.Annotations[AnnotationEvictedFrom] != "m1" {
			t.Errorf("%s: after the next update clusterNames %v, evicted-from %q; want [%s], m1", c.name, names, again.Metadata.Annotations[AnnotationEvictedFrom], c.want)
		}
	}
}

// TestRunNowOnTheGateway: a binding that runs at once (its namespace
// allows no delay) is placed, and moved when Karmada evicts it, by the
// real gateway, whose clock reads a fraction of a second past the
// webhook's second: the run-now window it is asked for leaves it that
// (a deadline of exactly now plus the run time was infeasible by then,
// and the binding was admitted unplaced).
func TestRunNowOnTheGateway(t *testing.T) {
	t.Parallel()
	at := replayStart.Add(500 * time.Millisecond)
	g := newGatewayAt(t, at)
	fed := fakeFederation{workloads: map[string]map[string]string{"now/api": {hold.AnnotationDuration: "PT1H"}}}
	w, err := New(Config{Scheduler: g.Service, Data: world(), Bindings: Bindings{Federation: fed},
		Workloads: Workloads{Now: func() time.Time { return at }, Signer: testSigner}})
	if err != nil {
		t.Fatal(err)
	}
	var created placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "now", "api", threeMembers, nil), nil), &created)
	a := created.Metadata.Annotations
	from := a[AnnotationCluster]
	if from == "" || a[AnnotationUnscheduled] != "" || a[hold.AnnotationCandidates] == "" {
		t.Fatalf("placed in %q (unscheduled: %q), candidates %q: want placed at once with its candidates", from, a[AnnotationUnscheduled], a[hold.AnnotationCandidates])
	}
	if a[hold.AnnotationStart] != replayStart.Add(time.Second).Format(time.RFC3339) {
		t.Errorf("start %s, want the gateway's now rounded up to the second", a[hold.AnnotationStart])
	}
	narrowed := `{"clusterAffinity":{"clusterNames":["` + from + `"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`
	upd := bindingObject(t, "now", "api", narrowed, a)
	upd["spec"].(map[string]any)["gracefulEvictionTasks"] = []any{map[string]any{"fromCluster": from}}
	var moved placed
	admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, bindingObject(t, "now", "api", narrowed, a)), &moved)
	if to := moved.Metadata.Annotations[AnnotationCluster]; to == from || to == "" || moved.Metadata.Annotations[AnnotationEvictedFrom] != from {
		t.Errorf("after the eviction from %s: cluster %q, evicted-from %q; want moved", from, to, moved.Metadata.Annotations[AnnotationEvictedFrom])
	}
}
