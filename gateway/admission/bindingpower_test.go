package admission

import (
	"maps"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// jobBinding is a ResourceBinding of Job ns/name whose replicas each
// request requests (nil: none), with placement (JSON).
func jobBinding(t *testing.T, ns, name, placement string, replicas int, requests map[string]any) map[string]any {
	t.Helper()
	b := bindingObject(t, ns, name, placement, nil)
	b["metadata"].(map[string]any)["name"] = name + "-job"
	spec := b["spec"].(map[string]any)
	spec["resource"] = map[string]any{"apiVersion": "batch/v1", "kind": "Job", "namespace": ns, "name": name}
	spec["replicas"] = replicas
	if requests != nil {
		spec["replicaRequirements"] = map[string]any{"resourceRequest": requests}
	}
	return b
}

// TestBindingPower: a placed binding carries its workload's power for the
// ledger — the declared one copied from the Job (a binding does not carry
// its workload's annotations), else one estimated from what its replicas
// request, signed with the decision — and the grams its decision promises
// to avoid at that power; without either there is no power and no grams.
func TestBindingPower(t *testing.T) {
	t.Parallel()
	deadline := t0.Add(10 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		name      string
		declared  string
		requests  map[string]any
		wantPower string // the annotation that carries it; "": none
	}{
		{"declared", "1000", map[string]any{"cpu": "2"}, hold.AnnotationPowerWatts},
		{"estimated from the requests", "", map[string]any{"cpu": "2", "memory": "4Gi"}, hold.AnnotationEstimatedPower},
		{"neither", "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT3H"}
			if c.declared != "" {
				a[hold.AnnotationPowerWatts] = c.declared
			}
			w := bindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, fakeFederation{workloads: map[string]map[string]string{"batch/render": a}})
			var got placed
			r := admitInto(t, w, bindingRequest(t, admissionv1.Create, jobBinding(t, "batch", "render", threeMembers, 2, c.requests), nil), &got)
			if !r.Allowed {
				t.Fatalf("response %+v", r)
			}
			ann := got.Metadata.Annotations
			if err := testSigner.Verify(hold.Subject{Kind: BindingKind, Namespace: "batch", Name: "render-job"}, ann); err != nil {
				t.Fatalf("signature: %v", err)
			}
			watts, estimated, err := hold.Power(ann)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantPower == "" {
				if watts != 0 || ann[hold.AnnotationAvoidedGrams] != "" {
					t.Fatalf("annotations %v: want no power and no promised grams", ann)
				}
				return
			}
			if _, ok := ann[c.wantPower]; !ok || !(watts > 0) || estimated != (c.wantPower == hold.AnnotationEstimatedPower) {
				t.Fatalf("annotations %v: want the power in %s", ann, c.wantPower)
			}
			if c.declared != "" && ann[hold.AnnotationPowerWatts] != c.declared {
				t.Fatalf("power %q, want the declared %s", ann[hold.AnnotationPowerWatts], c.declared)
			}
			// The fake decides at 101.25 against 120 at admission, for 3 h.
			want := strconv.FormatFloat(watts*3/1000*(120-101.25), 'f', 1, 64)
			if ann[hold.AnnotationAvoidedGrams] != want {
				t.Fatalf("promised %q g, want %s at %v W", ann[hold.AnnotationAvoidedGrams], want, watts)
			}
		})
	}
}

// TestBindingRecord: the ledger's record on a binding survives the
// webhook's UPDATE when the controller signed it, and is put back as it
// was when forged.
func TestBindingRecord(t *testing.T) {
	t.Parallel()
	w, got := heldBinding(t)
	subject := hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}
	rec := map[string]string{hold.AnnotationRealizedStatus: "realized", hold.AnnotationRealizedCoverage: "1.0000",
		hold.AnnotationRealizedGrams: "10.00", hold.AnnotationRunAtAdmissionGrams: "30.00", hold.AnnotationRealizedAvoided: "20.00"}
	for _, c := range []struct {
		name string
		sign bool
	}{{"signed", true}, {"forged", false}} {
		a := maps.Clone(got.Metadata.Annotations)
		maps.Copy(a, rec)
		a[hold.AnnotationRecordSignature] = "forged"
		if c.sign {
			a[hold.AnnotationRecordSignature] = testSigner.SignRecord(subject, a)
		}
		old := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, got.Metadata.Annotations)
		upd := bindingObject(t, "web", "api", `{"clusterAffinity":{"clusterNames":["m2"]}}`, a)
		for _, o := range []map[string]any{old, upd} {
			o["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Released}
		}
		var after placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &after)
		_, kept := after.Metadata.Annotations[hold.AnnotationRealizedAvoided]
		if kept != c.sign {
			t.Errorf("%s record: kept %v, want %v (annotations %v)", c.name, kept, c.sign, after.Metadata.Annotations)
		}
	}
}

// TestBindingShadow: in a namespace in shadow mode a binding is decided
// and annotated as it would be held — the decision signed, the member,
// the promise, labelled shadow — but neither narrowed nor held, and no
// later update narrows it or moves it off a member Karmada evicts it from.
func TestBindingShadow(t *testing.T) {
	t.Parallel()
	fed := fakeFederation{workloads: map[string]map[string]string{"trial/api": {hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}}}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, Bindings{Federation: fed, Hold: true})
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "trial", "api", threeMembers, nil), nil), &got)
	a := got.Metadata.Annotations
	if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 3 || got.Spec.Suspension != nil {
		t.Fatalf("clusterNames %v, suspension %+v: want the policy's three, not held", names, got.Spec.Suspension)
	}
	if got.Metadata.Labels[hold.Label] != hold.Shadow || a[hold.AnnotationShadow] != "true" || a[AnnotationCluster] != "m2" || a[hold.AnnotationSavingsPct] == "" {
		t.Fatalf("labels %v, annotations %v: want the decision for m2 in shadow", got.Metadata.Labels, a)
	}
	if err := testSigner.Verify(hold.Subject{Kind: BindingKind, Namespace: "trial", Name: "api-deployment"}, a); err != nil {
		t.Fatalf("signature: %v", err)
	}
	for _, c := range []struct{ evicted, weights string }{{"", ""}, {"m2", ""}, {"", "m1=1,m2=3"}} {
		evicted, ua := c.evicted, maps.Clone(a)
		if c.weights != "" { // as if divided: never applied in shadow
			ua[AnnotationWeights] = c.weights
		}
		old := bindingObject(t, "trial", "api", threeMembers, ua)
		upd := bindingObject(t, "trial", "api", threeMembers, ua)
		for _, o := range []map[string]any{old, upd} {
			o["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Shadow}
		}
		if evicted != "" {
			upd["spec"].(map[string]any)["gracefulEvictionTasks"] = []any{map[string]any{"fromCluster": evicted}}
		}
		var after placed
		admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &after)
		if names := after.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 3 || after.Metadata.Annotations[AnnotationCluster] != "m2" || after.Metadata.Annotations[AnnotationEvictedFrom] != "" {
			t.Errorf("update (evicted from %q, weights %q): clusterNames %v, cluster %s: want the policy's, the decision kept", evicted, c.weights, names, after.Metadata.Annotations[AnnotationCluster])
		}
	}
}

// TestBindingPowerForged: the power on a binding is carbongate's copy of
// its workload's: one a binding is created with is dropped (the decision
// sizes it instead), and an update's edit of it is put back.
func TestBindingPowerForged(t *testing.T) {
	t.Parallel()
	a := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}
	w := bindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, fakeFederation{workloads: map[string]map[string]string{"batch/render": a}})
	b := jobBinding(t, "batch", "render", threeMembers, 1, map[string]any{"cpu": "1"})
	b["metadata"].(map[string]any)["annotations"] = map[string]any{hold.AnnotationPowerWatts: "99999"}
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, b, nil), &got)
	ann := got.Metadata.Annotations
	if _, forged := ann[hold.AnnotationPowerWatts]; forged || ann[hold.AnnotationEstimatedPower] == "" {
		t.Fatalf("annotations %v: want the forged power dropped and the binding sized", ann)
	}
	old := jobBinding(t, "batch", "render", `{"clusterAffinity":{"clusterNames":["m2"]}}`, 1, nil)
	old["metadata"].(map[string]any)["annotations"] = ann
	edited := maps.Clone(ann)
	edited[hold.AnnotationPowerWatts] = "99999"
	upd := jobBinding(t, "batch", "render", `{"clusterAffinity":{"clusterNames":["m2"]}}`, 1, nil)
	upd["metadata"].(map[string]any)["annotations"] = edited
	var after placed
	admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &after)
	if _, forged := after.Metadata.Annotations[hold.AnnotationPowerWatts]; forged {
		t.Errorf("annotations %v: the power added by an update was kept", after.Metadata.Annotations)
	}
}
