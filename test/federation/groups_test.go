//go:build interop

package federation

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
)

// testAffinityGroups runs carbongate as the binding webhook for a Job whose
// policy has two clusterAffinities groups: "primary", the two members other
// than the one carbongate would choose among all three, and "backup", all
// three. Karmada schedules it with carbongate's group — the member decided
// among the primary group only — put in front of the policy's two, and the
// Job goes there alone; after an edit (Karmada's rewrite from the policy)
// the group is in front again, once.
func testAffinityGroups(t *testing.T, f *Federation) {
	const ns, name = "grouped", "grouped"
	g := startRegisteredGate(t, f, "carbongate-groups")
	deadline := "2021-06-01T12:00:00Z"
	best := g.decidedMember(t, f.Members, "PT2H", deadline)
	primary, primaryNames := membersBut(f.Members, best)
	want := g.decidedMember(t, primary, "PT2H", deadline)
	createNamespace(t, f, ns)
	if err := newJob(f, ns, name, map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H"}); err != nil {
		t.Fatal(err)
	}
	groups := []any{
		map[string]any{"affinityName": "primary", "clusterNames": primaryNames},
		map[string]any{"affinityName": "backup", "clusterNames": memberNames(f)},
	}
	createPlacedPolicy(t, f, ns, name, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": name},
		map[string]any{"clusterAffinities": groups})

	wantGroups := append([]any{map[string]any{"affinityName": admission.AffinityGroup, "clusterNames": []any{want.Name}}}, groups...)
	placedIn := func(b *unstructured.Unstructured) error {
		got, _, _ := unstructured.NestedSlice(b.Object, "spec", "placement", "clusterAffinities")
		observed, _, _ := unstructured.NestedString(b.Object, "status", "schedulerObservingAffinityName")
		if err := isScheduledTo(b, want.Name); err != nil || !reflect.DeepEqual(got, wantGroups) || observed != admission.AffinityGroup {
			return fmt.Errorf("clusterAffinities %v, scheduled with group %q (%v); want %v, scheduled with %q to %s",
				got, observed, err, wantGroups, admission.AffinityGroup, want.Name)
		}
		return nil
	}
	b := waitBinding(t, f, ns, name+"-job", placedIn)
	if a := b.GetAnnotations(); a[admission.AnnotationCluster] != want.Name || a[hold.AnnotationRegion] != want.Region {
		t.Fatalf("binding annotations %v: want the decision for %s (%s)", a, want.Name, want.Region)
	}
	editJob(t, f, ns, name, "grouped")
	waitBinding(t, f, ns, name+"-job", func(after *unstructured.Unstructured) error {
		if after.GetGeneration() == b.GetGeneration() {
			return errors.New("not rewritten by Karmada after the edit yet")
		}
		return placedIn(after)
	})
	waitJob(t, want, ns, name)
	if in := jobIn(t, f, ns, name); len(in) != 1 || in[0] != want.Name {
		t.Fatalf("Job %s/%s in %v, want in %s only", ns, name, in, want.Name)
	}
}
