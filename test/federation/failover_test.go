//go:build interop

package federation

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
)

// testFailover: Karmada evicts a placed Deployment from its member (its
// Failover feature on, the member tainted NoExecute, as a ClusterTaintPolicy
// or an operator does for a failing member). Narrowed by carbongate to that
// member alone, it would fit nowhere (Karmada's scheduler filters out a
// member under eviction); carbongate's webhook, on the eviction's update,
// moves it to the cleanest other member it decided among that can take it
// now, and Karmada schedules it there. The binding records the move
// (carbongate.io/evicted-from, the decision's zone and cluster).
func testFailover(t *testing.T, f *Federation) {
	const ns, name = "failover", "failover"
	g := startRegisteredGate(t, f, "carbongate-failover")
	createNamespace(t, f, ns)
	createAnnotatedDeployment(t, f, ns, name, 1, map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}},
		map[string]string{hold.AnnotationDeadline: "2021-06-01T12:00:00Z", hold.AnnotationDuration: "PT2H"})
	b := waitBinding(t, f, ns, name+"-deployment", func(b *unstructured.Unstructured) error {
		if b.GetAnnotations()[admission.AnnotationCluster] == "" {
			return fmt.Errorf("not placed: annotations %v", b.GetAnnotations())
		}
		return nil
	})
	from := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	if from == nil || b.GetAnnotations()[hold.AnnotationCandidates] == "" {
		t.Fatalf("placed in %q with candidates %q: want a member and the candidates", b.GetAnnotations()[admission.AnnotationCluster], b.GetAnnotations()[hold.AnnotationCandidates])
	}
	waitDeployment(t, from, ns, name, 1)

	taint(t, f, from.Name, `[{"key":"example.com/failover","effect":"NoExecute"}]`)
	t.Cleanup(func() { taint(t, f, from.Name, "null") })
	start := time.Now()
	b = waitBinding(t, f, ns, name+"-deployment", func(b *unstructured.Unstructured) error {
		if got := b.GetAnnotations()[admission.AnnotationEvictedFrom]; got != from.Name {
			return fmt.Errorf("evicted-from %q, cluster %s", got, b.GetAnnotations()[admission.AnnotationCluster])
		}
		return nil
	})
	a := b.GetAnnotations()
	to := f.Member(a[admission.AnnotationCluster])
	if to == nil || to == from {
		t.Fatalf("moved to %q, want another member than %s", a[admission.AnnotationCluster], from.Name)
	}
	if a[hold.AnnotationZone] != memberZone(t, to) || a[hold.AnnotationRegion] != to.Region {
		t.Errorf("decision zone %s region %s after the move, want %s's (%s, %s)", a[hold.AnnotationZone], a[hold.AnnotationRegion], to.Name, memberZone(t, to), to.Region)
	}
	// At least this one: the bindings earlier tests left in that member
	// are evicted and moved too, and an eviction retried on a conflict
	// is reviewed again.
	if n := g.metric(t, `carbongate_admission_binding_failovers_total{outcome="moved"}`); n < 1 {
		t.Errorf("failovers moved %v, want at least 1", n)
	}
	waitDeployment(t, to, ns, name, 1)
	t.Logf("figures: the Deployment reached %s %v after %s was tainted NoExecute", to.Name, time.Since(start).Round(time.Millisecond), from.Name)
	b = waitBinding(t, f, ns, name+"-deployment", func(b *unstructured.Unstructured) error { return isScheduledTo(b, to.Name) })
	// Karmada's graceful eviction removes the copy in the evicted member
	// once the new one is healthy, or after --graceful-eviction-timeout; the
	// members here run no controllers, so their Deployments never report
	// available, and the old copy stays until then.
	tasks, _, _ := unstructured.NestedSlice(b.Object, "spec", "gracefulEvictionTasks")
	_, err := from.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	t.Logf("the binding's graceful eviction tasks: %v; the copy in %s: %v", tasks, from.Name, err)
	if len(tasks) != 1 {
		t.Errorf("graceful eviction tasks %v, want the one from %s", tasks, from.Name)
	}
}
