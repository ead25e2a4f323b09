package admission

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// threeGroups are clusterAffinities whose first group admits no cluster
// (m6's taint is not tolerated), the second the env=prod ones (m1 NL, m2
// DE) and the third any; the third carries a field carbongate does not
// know, kept as sent.
const threeGroups = `{"clusterAffinities":[` +
	`{"affinityName":"gpu","clusterNames":["m6"]},` +
	`{"affinityName":"prod","labelSelector":{"matchLabels":{"env":"prod"}}},` +
	`{"affinityName":"any","futureField":"kept"}],` +
	`"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`

// groupsOf returns the clusterAffinities of the binding doc as decoded JSON.
func groupsOf(t *testing.T, doc map[string]any) []any {
	t.Helper()
	g, _ := doc["spec"].(map[string]any)["placement"].(map[string]any)["clusterAffinities"].([]any)
	return g
}

// wantGroups checks that doc's groups are carbongate's of cluster followed
// by the groups of placement (JSON) as they were.
func wantGroups(t *testing.T, doc map[string]any, cluster, placement string) {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(placement), &p); err != nil {
		t.Fatal(err)
	}
	want := append([]any{map[string]any{"affinityName": AffinityGroup, "clusterNames": []any{cluster}}}, p["clusterAffinities"].([]any)...)
	if got := groupsOf(t, doc); !reflect.DeepEqual(got, want) {
		t.Fatalf("clusterAffinities\n %v\nwant\n %v", got, want)
	}
}

// TestPlaceBindingGroups: a binding with clusterAffinities is decided
// among the clusters of its first group that admits any (the second here)
// and gets carbongate's group of the decided cluster in front of its own,
// which are kept as sent, with the decision recorded as for
// clusterAffinity.
func TestPlaceBindingGroups(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"GB", "DE", "NL"}} // GB (m3) would win among all
	w := bindingHook(t, fs, fakeFederation{workloads: map[string]map[string]string{"batch/etl": nil}})
	var got map[string]any
	r := admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "batch", "etl", threeGroups, nil), nil), &got)
	if !r.Allowed || r.Result != nil {
		t.Fatalf("response %+v, want admitted quietly", r)
	}
	wantGroups(t, got, "m2", threeGroups)
	if reqs := fs.requests(); len(reqs) != 1 || strings.Join(zoneNames(reqs[0].Zones), ",") != "DE,NL" {
		t.Fatalf("asked %+v, want the zones of group prod: DE,NL", reqs)
	}
	var p placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "batch", "etl", threeGroups, nil), nil), &p)
	if a := p.Metadata.Annotations; a[AnnotationCluster] != "m2" || a[hold.AnnotationZone] != "DE" || a[AnnotationProvenance] == "" || a[hold.AnnotationSignature] == "" {
		t.Fatalf("annotations %v, want the decision for m2", a)
	}
	if p.Spec.Placement.ClusterAffinity != nil {
		t.Fatalf("clusterAffinity %+v set beside clusterAffinities", p.Spec.Placement.ClusterAffinity)
	}
}

// TestBindingGroupsUpdate: on UPDATE carbongate's group is put back in
// front once — after Karmada's rewrite from the policy, over a group of
// its name moved or doubled — and an update that keeps it changes no
// placement; UPDATE never decides.
func TestBindingGroupsUpdate(t *testing.T) {
	t.Parallel()
	fs := &fakeScheduler{ranking: []forecast.Zone{"DE"}}
	w := bindingHook(t, fs, fakeFederation{workloads: map[string]map[string]string{"batch/etl": nil}})
	var first map[string]any
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "batch", "etl", threeGroups, nil), nil), &first)
	annotations := map[string]string{}
	for k, v := range first["metadata"].(map[string]any)["annotations"].(map[string]any) {
		annotations[k] = v.(string)
	}
	placedJSON, err := json.Marshal(first["spec"].(map[string]any)["placement"])
	if err != nil {
		t.Fatal(err)
	}
	old := bindingObject(t, "batch", "etl", string(placedJSON), annotations)
	moved := `{"clusterAffinities":[{"affinityName":"gpu","clusterNames":["m6"]},{"affinityName":"carbongate","clusterNames":["m1"]},` +
		`{"affinityName":"prod","labelSelector":{"matchLabels":{"env":"prod"}}},{"affinityName":"carbongate","clusterNames":["m2"]},{"affinityName":"any","futureField":"kept"}],` +
		`"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`
	for _, c := range []struct {
		name        string
		placement   string
		annotations map[string]string
	}{
		{"Karmada's rewrite from the policy", threeGroups, nil},
		{"carbongate's group moved and doubled", moved, annotations},
		{"placed already", string(placedJSON), annotations},
	} {
		var got map[string]any
		r := admitInto(t, w, bindingRequest(t, admissionv1.Update, bindingObject(t, "batch", "etl", c.placement, c.annotations), old), &got)
		if !r.Allowed {
			t.Fatalf("%s: denied %+v", c.name, r.Result)
		}
		wantGroups(t, got, "m2", threeGroups)
		if c.placement == string(placedJSON) && strings.Contains(string(r.Patch), "/spec/placement") {
			t.Errorf("%s: patch %s, want the placement untouched", c.name, r.Patch)
		}
	}
	if n := len(fs.requests()); n != 1 {
		t.Fatalf("asked the gateway %d times, want once (UPDATE never decides)", n)
	}
}

// TestBindingGroupsUnplaced: Divided replicas under clusterAffinities, a
// spread over more than one group, and groups that admit no candidate,
// leave the binding unplaced, saying why.
func TestBindingGroupsUnplaced(t *testing.T) {
	t.Parallel()
	w := bindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, fakeFederation{workloads: map[string]map[string]string{"batch/etl": nil}})
	for _, c := range []struct{ name, placement, why string }{
		{"divided", `{"clusterAffinities":[{"affinityName":"a"}],"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}}`, whyDividedGroups},
		{"spread over groups", `{"clusterAffinities":[{"affinityName":"a"}],"spreadConstraints":[{"spreadByField":"cluster","minGroups":2}]}`, whySpreadGroups},
		{"no candidate", `{"clusterAffinities":[{"affinityName":"a","clusterNames":["m4"]},{"affinityName":"b"}]}`, `no candidate cluster in group "a"`},
	} {
		var got map[string]any
		r := admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "batch", "etl", c.placement, nil), nil), &got)
		why, _ := got["metadata"].(map[string]any)["annotations"].(map[string]any)[AnnotationUnscheduled].(string)
		if !r.Allowed || !strings.Contains(why, c.why) {
			t.Errorf("%s: allowed %v, unscheduled %q, want containing %q", c.name, r.Allowed, why, c.why)
		}
		if g := groupsOf(t, got); len(g) == 0 || g[0].(map[string]any)["affinityName"] == AffinityGroup {
			t.Errorf("%s: groups %v, want the policy's alone", c.name, g)
		}
	}
}

// TestBindingGroupsHold: with Hold a grouped binding is held as any other,
// and an UPDATE that drops the label and carbongate's group gets both back.
func TestBindingGroupsHold(t *testing.T) {
	t.Parallel()
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339)}
	fed := fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL"}}, Bindings{Federation: fed, Hold: true})
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", threeGroups, nil), nil), &got)
	if !got.held() || !groupedTo(got.Spec.Placement.ClusterAffinities, "m1") {
		t.Fatalf("placed %+v, want held, carbongate's group of m1 first", got)
	}
	old := bindingObject(t, "web", "api", threeGroups, got.Metadata.Annotations)
	old["metadata"].(map[string]any)["labels"] = map[string]any{hold.Label: hold.Held}
	var after placed
	admitInto(t, w, bindingRequest(t, admissionv1.Update, bindingObject(t, "web", "api", threeGroups, got.Metadata.Annotations), old), &after)
	if after.Metadata.Labels[hold.Label] != hold.Held || !groupedTo(after.Spec.Placement.ClusterAffinities, "m1") || len(after.Spec.Placement.ClusterAffinities) != 4 {
		t.Fatalf("after an UPDATE: label %q, groups %+v; want held, carbongate's group of m1 and the three", after.Metadata.Labels[hold.Label], after.Spec.Placement.ClusterAffinities)
	}
}
