package admission

import (
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// dividedPlacement is a Divided placement over m1 (NL), m2 (DE) and m3
// (GB) with spread constraints (JSON, "" for none).
func dividedPlacement(spread string) string {
	p := `{"clusterAffinity":{"clusterNames":["m1","m2","m3"]},"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Aggregated"}`
	if spread != "" {
		p += `,"spreadConstraints":` + spread
	}
	return p + `}`
}

// dividedOut is what the tests read of an admitted divided binding.
type dividedOut struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Placement struct {
			ClusterAffinity struct {
				ClusterNames []string `json:"clusterNames"`
			} `json:"clusterAffinity"`
			ReplicaScheduling struct {
				ReplicaDivisionPreference string `json:"replicaDivisionPreference"`
				WeightPreference          struct {
					StaticWeightList []struct {
						TargetCluster struct {
							ClusterNames []string `json:"clusterNames"`
						} `json:"targetCluster"`
						Weight int64 `json:"weight"`
					} `json:"staticWeightList"`
				} `json:"weightPreference"`
			} `json:"replicaScheduling"`
		} `json:"placement"`
	} `json:"spec"`
}

// weightsOf reads the static weights of a placed binding, by cluster.
func weightsOf(t *testing.T, got dividedOut) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, x := range got.Spec.Placement.ReplicaScheduling.WeightPreference.StaticWeightList {
		if len(x.TargetCluster.ClusterNames) != 1 {
			t.Fatalf("target %v: want one cluster", x.TargetCluster)
		}
		out[x.TargetCluster.ClusterNames[0]] = x.Weight
	}
	return out
}

// TestBindingWeights: a Divided binding of 6 replicas goes to the fewest
// clusters its spread constraints allow, the greenest by their zone's
// intensity over the decided window, one replica in each but the
// greenest; without constraints all replicas go to the greenest;
// constraints the candidates cannot meet leave it unplaced; Karmada's
// rewrite on UPDATE gets the weights back.
func TestBindingWeights(t *testing.T) {
	t.Parallel()
	means := map[forecast.Zone]float64{"DE": 100, "NL": 200, "GB": 400}
	deadline := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT2H"}
	for _, c := range []struct {
		name, spread string
		want         map[string]int64
		why          string
	}{
		{name: "no constraint", want: map[string]int64{"m2": 1}},
		{name: "two clusters", spread: `[{"spreadByField":"cluster","minGroups":2,"maxGroups":3}]`, want: map[string]int64{"m2": 5, "m1": 1}},
		{name: "three regions", spread: `[{"spreadByField":"region","minGroups":3}]`, want: map[string]int64{"m2": 4, "m1": 1, "m3": 1}},
		{name: "more than the candidates", spread: `[{"spreadByField":"cluster","minGroups":4}]`, why: "the spread constraints need more groups"},
	} {
		fs := &fakeScheduler{means: means}
		w := newBindingHook(t, fs, Bindings{Federation: fakeFederation{workloads: map[string]map[string]string{"web/api": deadline}}})
		obj := bindingObject(t, "web", "api", dividedPlacement(c.spread), nil)
		obj["spec"].(map[string]any)["replicas"] = 6
		var got dividedOut
		admitInto(t, w, bindingRequest(t, admissionv1.Create, obj, nil), &got)
		if c.why != "" {
			if why := got.Metadata.Annotations[AnnotationUnscheduled]; !strings.Contains(why, c.why) {
				t.Errorf("%s: unscheduled %q, want %q", c.name, why, c.why)
			}
			continue
		}
		if ws := weightsOf(t, got); !equalWeights(ws, c.want) {
			t.Errorf("%s: weights %v, want %v", c.name, ws, c.want)
		}
		if names := got.Spec.Placement.ClusterAffinity.ClusterNames; len(names) != len(c.want) || names[0] != "m2" {
			t.Errorf("%s: clusterNames %v, want the %d weighted, m2 first", c.name, names, len(c.want))
		}
		if got.Spec.Placement.ReplicaScheduling.ReplicaDivisionPreference != divisionWeight {
			t.Errorf("%s: replicaDivisionPreference %q", c.name, got.Spec.Placement.ReplicaScheduling.ReplicaDivisionPreference)
		}
		if reqs := fs.requests(); len(c.want) > 1 && (len(reqs) != 2 || !reqs[1].EarliestStart.Equal(t0) || !reqs[1].Deadline.Equal(t0.Add(2*time.Hour))) {
			t.Errorf("%s: asked %+v, want a second question for the decided window [t0, t0+2h)", c.name, reqs)
		}

		// Karmada rewrites the placement from the policy: the weights come back.
		old := bindingObject(t, "web", "api", dividedPlacement(c.spread), got.Metadata.Annotations)
		var again dividedOut
		admitInto(t, w, bindingRequest(t, admissionv1.Update, bindingObject(t, "web", "api", dividedPlacement(c.spread), nil), old), &again)
		if ws := weightsOf(t, again); !equalWeights(ws, c.want) {
			t.Errorf("%s: weights after an UPDATE %v, want %v", c.name, ws, c.want)
		}
	}
}

func equalWeights(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
