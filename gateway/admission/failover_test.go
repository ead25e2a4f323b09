package admission

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// failoverCase is a placed binding (decided for m1 of m1 NL, m2 DE, m3 GB
// by a gateway ranking NL, GB, DE) updated while Karmada evicts it.
type failoverCase struct {
	name       string
	evicted    []string // the update's graceful eviction tasks
	down       []int    // members()' indexes Karmada marks not Ready
	candidates bool     // recorded at admission
	tamper     bool     // the promise changed past the webhook (unsigned)
	staged     bool     // held and staged: the update resets its dispatch hold
	gatewayErr bool     // the gateway fails
	want       string   // the cluster after the update
}

// TestFailover: a placed binding Karmada evicts from its member (a graceful
// eviction task from it, after which Karmada's scheduler filters the member
// out) is narrowed, on that update, to the candidate of lowest forecast
// that is not evicted and can take it now — its decision moved there,
// re-signed, the member it left recorded, a staged one still held and
// staged — and stays there on the next update. An eviction from another
// member; a binding without recorded candidates, whose decision does not
// verify, whose other candidates cannot take it now; a gateway that fails:
// narrowed to its member as before, counted as waiting.
func TestFailover(t *testing.T) {
	t.Parallel()
	for _, c := range []failoverCase{
		{name: "evicted from its member", evicted: []string{"m1"}, candidates: true, want: "m3"},
		{name: "the next cleanest not Ready", evicted: []string{"m1"}, down: []int{2}, candidates: true, want: "m2"},
		{name: "the next cleanest evicted too", evicted: []string{"m1", "m3"}, candidates: true, want: "m2"},
		{name: "staged", evicted: []string{"m1"}, candidates: true, staged: true, want: "m3"},
		{name: "evicted from another member", evicted: []string{"m3"}, candidates: true, want: "m1"},
		{name: "no candidates recorded", evicted: []string{"m1"}, want: "m1"},
		{name: "none other can take it now", evicted: []string{"m1"}, down: []int{1, 2}, candidates: true, want: "m1"},
		{name: "not signed", evicted: []string{"m1"}, candidates: true, tamper: true, want: "m1"},
		{name: "the gateway fails", evicted: []string{"m1"}, candidates: true, gatewayErr: true, want: "m1"},
	} {
		testFailoverCase(t, c)
	}
}

func testFailoverCase(t *testing.T, c failoverCase) {
	t.Helper()
	subject := hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}
	narrowed := `{"clusterAffinity":{"clusterNames":["m1"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`
	fed := fakeFederation{workloads: map[string]map[string]string{"web/api": {hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}}}
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
	if c.tamper {
		a[hold.AnnotationSavingsPct] = "99.9"
	}
	fed.clusters = members()
	for _, i := range c.down {
		fed.clusters[i].Taints = notReady()[1].Taints
	}
	fs := &fakeScheduler{ranking: []forecast.Zone{"NL", "GB", "DE"}}
	if c.gatewayErr {
		fs.err = errors.New("forecasts unavailable")
	}
	w = newBindingHook(t, fs, Bindings{Federation: fed})
	old := bindingObject(t, "web", "api", narrowed, a)
	upd := bindingObject(t, "web", "api", narrowed, a)
	if c.staged {
		old["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
		old["spec"].(map[string]any)["suspension"] = map[string]any{"scheduling": false, "dispatching": true}
		upd["spec"].(map[string]any)["suspension"] = map[string]any{"scheduling": false, "dispatching": false} // Karmada's detector, from the policy
	}
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
		return
	}
	if c.staged && (got.Metadata.Labels[hold.Label] != hold.Held || got.Spec.Suspension == nil || got.Spec.Suspension.Dispatching == nil || !*got.Spec.Suspension.Dispatching) {
		t.Errorf("%s: label %q, suspension %+v; want still held and staged", c.name, got.Metadata.Labels[hold.Label], got.Spec.Suspension)
	}
	moved, waits := testutil.ToFloat64(w.wl.failovers.WithLabelValues("moved")), testutil.ToFloat64(w.wl.failovers.WithLabelValues("waits"))
	wantMoved, wantWaits := 0.0, 0.0
	switch {
	case c.want != "m1":
		wantMoved = 1
	case slices.Contains(c.evicted, "m1"):
		wantWaits = 1
	}
	if moved != wantMoved || waits != wantWaits {
		t.Errorf("%s: failovers moved %v, waits %v; want %v, %v", c.name, moved, waits, wantMoved, wantWaits)
	}
	if c.want == "m1" {
		if ga[AnnotationEvictedFrom] != "" || ga[hold.AnnotationSignature] != a[hold.AnnotationSignature] {
			t.Errorf("%s: evicted-from %q, signature changed %v on a binding left in place", c.name, ga[AnnotationEvictedFrom], ga[hold.AnnotationSignature] != a[hold.AnnotationSignature])
		}
		return
	}
	if err := testSigner.Verify(subject, ga); err != nil {
		t.Errorf("%s: the moved decision does not verify: %v", c.name, err)
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

// TestFailoverMovesPromise: a binding moved off an evicted member
// promises what the new member's forecast gives for its hours against the
// admission's baseline (read back from its provenance): placed at 101.25
// g/kWh promising 12.5 %, so against 115.71; moved to GB at 90 (DE 130):
// 22.2 % and, at the 1 kW it declares for 3 h, 77.1 g — re-signed.
func TestFailoverMovesPromise(t *testing.T) {
	t.Parallel()
	subject := hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}
	narrowed := `{"clusterAffinity":{"clusterNames":["m1"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`
	fed := fakeFederation{workloads: map[string]map[string]string{"web/api": {hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339),
		hold.AnnotationDuration: "PT3H", hold.AnnotationPowerWatts: "1000"}}}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL", "GB", "DE"}}, Bindings{Federation: fed})
	var created placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeMembers, nil), nil), &created)
	a := created.Metadata.Annotations
	if a[AnnotationCluster] != "m1" || a[hold.AnnotationSavingsPct] != "12.5" || a[hold.AnnotationAvoidedGrams] == "" {
		t.Fatalf("created %v: want m1 promising 12.5 %% and grams", a)
	}
	w = newBindingHook(t, &fakeScheduler{means: map[forecast.Zone]float64{"GB": 90, "DE": 130}}, Bindings{Federation: fed})
	upd := bindingObject(t, "web", "api", narrowed, a)
	upd["spec"].(map[string]any)["gracefulEvictionTasks"] = []any{map[string]any{"fromCluster": "m1"}}
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, bindingObject(t, "web", "api", narrowed, a)), &got)
	ga := got.Metadata.Annotations
	if ga[AnnotationCluster] != "m3" || ga[hold.AnnotationSavingsPct] != "22.2" || ga[hold.AnnotationAvoidedGrams] != "77.1" {
		t.Errorf("moved to %s promising %s %%, %s g; want m3, 22.2 %%, 77.1 g", ga[AnnotationCluster], ga[hold.AnnotationSavingsPct], ga[hold.AnnotationAvoidedGrams])
	}
	if ga[AnnotationProvenance] != a[AnnotationProvenance] || ga[hold.AnnotationBaselineZone] != a[hold.AnnotationBaselineZone] {
		t.Errorf("provenance or baseline zone changed: the admission's stay")
	}
	if err := testSigner.Verify(subject, ga); err != nil {
		t.Errorf("the moved promise does not verify: %v", err)
	}
}
