package admission

import (
	"fmt"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// twoInNL is members() with m7, a second member cluster in m1's region
// (grid zone NL).
func twoInNL() []MemberCluster {
	return append(members(), MemberCluster{Name: "m7", Provider: "azure", Region: "westeurope"})
}

// sameZonePlacement allows m1, m7 (NL), m2 (DE) and m3 (GB).
const sameZonePlacement = `{"clusterAffinity":{"clusterNames":["m1","m2","m3","m7"]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`

// TestBindingsOfOneZone: bindings decided for a zone of two member
// clusters are spread over both (each narrowed to one, the same on every
// admission of it), and each records every member its placement allows as
// a candidate, with its zone, signed.
func TestBindingsOfOneZone(t *testing.T) {
	t.Parallel()
	const n = 40
	fed := fakeFederation{clusters: twoInNL(), workloads: map[string]map[string]string{}}
	for i := range n {
		fed.workloads[fmt.Sprintf("web/api-%d", i)] = map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}
	}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL", "GB", "DE"}}, Bindings{Federation: fed})
	count := map[string]int{}
	for i := range n {
		var got placed
		admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", fmt.Sprintf("api-%d", i), sameZonePlacement, nil), nil), &got)
		a := got.Metadata.Annotations
		member := a[AnnotationCluster]
		if names := got.Spec.Placement.ClusterAffinity.ClusterNames; a[hold.AnnotationZone] != "NL" || len(names) != 1 || names[0] != member {
			t.Fatalf("api-%d: zone %s, cluster %s, clusterNames %v; want NL, narrowed to its cluster", i, a[hold.AnnotationZone], member, names)
		}
		count[member]++
		cs, ok, err := hold.ParseCandidates(a)
		var clusters []string
		for _, c := range cs {
			clusters = append(clusters, c.Zone+":"+c.Cluster)
		}
		if err != nil || !ok || !slices.Equal(clusters, []string{"DE:m2", "GB:m3", "NL:m1", "NL:m7"}) {
			t.Fatalf("api-%d: candidates %v (%v %v), want every member allowed with its zone", i, clusters, ok, err)
		}
		if err := testSigner.Verify(hold.Subject{Kind: BindingKind, Namespace: "web", Name: fmt.Sprintf("api-%d-deployment", i)}, a); err != nil {
			t.Fatalf("api-%d: %v", i, err)
		}
		var again placed
		admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", fmt.Sprintf("api-%d", i), sameZonePlacement, nil), nil), &again)
		if again.Metadata.Annotations[AnnotationCluster] != member {
			t.Fatalf("api-%d: placed in %s, then in %s", i, member, again.Metadata.Annotations[AnnotationCluster])
		}
	}
	if count["m1"] < n/4 || count["m7"] < n/4 || count["m1"]+count["m7"] != n {
		t.Errorf("bindings by member %v, want the %d spread over m1 and m7", count, n)
	}
}

// TestFailoverWithinZone: a binding Karmada evicts from its member goes to
// the other member of its zone when that zone is still the cleanest: its
// decision's zone and promise stay, the member it left is recorded.
func TestFailoverWithinZone(t *testing.T) {
	t.Parallel()
	fed := fakeFederation{clusters: twoInNL(), workloads: map[string]map[string]string{
		"web/api": {hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}}}
	w := newBindingHook(t, &fakeScheduler{ranking: []forecast.Zone{"NL", "GB", "DE"}}, Bindings{Federation: fed})
	var created placed
	admitInto(t, w, bindingRequest(t, admissionv1.Create, bindingObject(t, "web", "api", sameZonePlacement, nil), nil), &created)
	a := created.Metadata.Annotations
	from := a[AnnotationCluster]
	sibling := map[string]string{"m1": "m7", "m7": "m1"}[from]
	if sibling == "" {
		t.Fatalf("placed in %q, want m1 or m7", from)
	}
	narrowed := fmt.Sprintf(`{"clusterAffinity":{"clusterNames":[%q]},"replicaScheduling":{"replicaSchedulingType":"Duplicated"}}`, from)
	old := bindingObject(t, "web", "api", narrowed, a)
	upd := bindingObject(t, "web", "api", narrowed, a)
	upd["spec"].(map[string]any)["gracefulEvictionTasks"] = []any{map[string]any{"fromCluster": from, "reason": "TaintUntolerated"}}
	var got placed
	admitInto(t, w, bindingRequest(t, admissionv1.Update, upd, old), &got)
	ga := got.Metadata.Annotations
	if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != 1 || names[0] != sibling || ga[AnnotationCluster] != sibling {
		t.Fatalf("clusterNames %v, cluster %s; want %s, the other member of NL", names, ga[AnnotationCluster], sibling)
	}
	if ga[hold.AnnotationZone] != "NL" || ga[AnnotationEvictedFrom] != from {
		t.Errorf("zone %s, evicted-from %q; want NL, %s", ga[hold.AnnotationZone], ga[AnnotationEvictedFrom], from)
	}
	if err := testSigner.Verify(hold.Subject{Kind: BindingKind, Namespace: "web", Name: "api-deployment"}, ga); err != nil {
		t.Errorf("moved decision: %v", err)
	}
}

// TestJobsOfOneZone: Jobs decided for a zone of two node regions
// (germanywc and germanyn, both DE) are pinned to one or the other, spread
// over both, each recording the region it is pinned to as its zone's
// candidate.
func TestJobsOfOneZone(t *testing.T) {
	t.Parallel()
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, fakeCluster{regions: []string{"germanywc", "germanyn", "westeurope"}, ns: optedIn()}, "")
	count := map[string]int{}
	for i := range 40 {
		j := job("batch", nil, false)
		j.Name = fmt.Sprintf("train-%d", i)
		var held batchv1.Job
		admitInto(t, w, workloadRequest(t, admissionv1.Create, j, nil), &held)
		region := held.Annotations[hold.AnnotationRegion]
		count[region]++
		cs, ok, err := hold.ParseCandidates(held.Annotations)
		if c, found := hold.Find(cs, "DE", "", hold.Candidate{}); err != nil || !ok || !found || c.Region != region || len(cs) != 2 {
			t.Fatalf("%s: pinned to %s, candidates %v (%v %v); want its region as DE's candidate, and NL's", j.Name, region, cs, ok, err)
		}
		terms := held.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if last := terms[0].MatchExpressions[len(terms[0].MatchExpressions)-1]; !slices.Equal(last.Values, []string{region}) {
			t.Fatalf("%s: pinned by %+v, want region In [%s]", j.Name, last, region)
		}
	}
	if count["germanywc"] < 10 || count["germanyn"] < 10 || count["germanywc"]+count["germanyn"] != 40 {
		t.Errorf("Jobs by region %v, want the 40 spread over germanywc and germanyn", count)
	}
	// Created with generateName, they have no name yet: the request's UID
	// spreads them.
	clear(count)
	for i := range 40 {
		j := job("batch", nil, false)
		j.Name, j.GenerateName = "", "train-"
		req := workloadRequest(t, admissionv1.Create, j, nil)
		req.UID = types.UID(fmt.Sprintf("uid-%d", i))
		var held batchv1.Job
		admitInto(t, w, req, &held)
		count[held.Annotations[hold.AnnotationRegion]]++
	}
	if count["germanywc"] < 10 || count["germanyn"] < 10 {
		t.Errorf("Jobs created with generateName by region %v, want them spread over germanywc and germanyn", count)
	}
}

// TestManyMembersCandidates: more member clusters than hold.MaxCandidates
// are recorded as one per zone, the one the binding goes to there; the
// decided one is among them.
func TestManyMembersCandidates(t *testing.T) {
	t.Parallel()
	var cand clusterCandidates
	cand.members = map[forecast.Zone][]MemberCluster{}
	for i := range hold.MaxCandidates + 1 {
		z := forecast.Zone([]string{"NL", "DE", "GB"}[i%3])
		cand.members[z] = append(cand.members[z], MemberCluster{Name: fmt.Sprintf("m%02d", i), Region: string(z)})
	}
	cand.zones = []forecast.Zone{"DE", "GB", "NL"}
	cs, ok, err := hold.ParseCandidates(map[string]string{hold.AnnotationCandidates: clusterCandidatesOf(cand, "web/api")})
	if err != nil || !ok || len(cs) != 3 {
		t.Fatalf("candidates %v (%v %v), want one per zone", cs, ok, err)
	}
	for _, c := range cs {
		if m, _ := cand.in(forecast.Zone(c.Zone), "web/api"); m.Name != c.Cluster {
			t.Errorf("%s's candidate %s, want %s, where the binding goes there", c.Zone, c.Cluster, m.Name)
		}
	}
}

// TestDividedOverOneZone: a Divided binding whose spread needs two
// clusters, and whose allowed members are two of the cleanest zone and one
// of a dirtier zone, is weighted over the two of the cleanest zone.
func TestDividedOverOneZone(t *testing.T) {
	t.Parallel()
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT2H"}
	fed := fakeFederation{clusters: twoInNL(), workloads: map[string]map[string]string{"web/api": deadline}}
	w := newBindingHook(t, &fakeScheduler{means: map[forecast.Zone]float64{"NL": 100, "GB": 400}}, Bindings{Federation: fed})
	spread := `{"clusterAffinity":{"clusterNames":["m1","m3","m7"]},"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"},` +
		`"spreadConstraints":[{"spreadByField":"cluster","minGroups":2,"maxGroups":2}]}`
	obj := bindingObject(t, "web", "api", spread, nil)
	obj["spec"].(map[string]any)["replicas"] = 4
	var got dividedOut
	admitInto(t, w, bindingRequest(t, admissionv1.Create, obj, nil), &got)
	if ws := weightsOf(t, got); len(ws) != 2 || ws["m1"]+ws["m7"] != 4 {
		t.Errorf("weights %v (unscheduled %q), want the 4 replicas over m1 and m7, both NL", ws, got.Metadata.Annotations[AnnotationUnscheduled])
	}
}
