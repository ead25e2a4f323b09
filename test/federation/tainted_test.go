//go:build interop

package federation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
)

// testReleaseTainted: the member a held Job was placed in is tainted
// NoSchedule (a member cordoned, or NotReady: Karmada taints those the same
// way) before its release, and before it is staged. Karmada's scheduler
// would find no cluster the narrowed placement allows and leave it
// unscheduled until the taint went; carbongate's controller, staging it,
// moves it first to the cleanest other member its policy allows that can
// take it (a MovedOff warning says why and where), so the Job appears in
// that member, at its time, and in no other. A Job whose policy allows
// that member only (cornered: decided there for the same second) has
// nowhere to go: released there, Karmada leaves it unscheduled with the
// controller's Unplaceable warning, and it appears there once the taint
// is gone. (A member tainted NoSchedule after the staging keeps what
// Karmada scheduled there, as a node keeps its pods.)
func testReleaseTainted(t *testing.T, f *Federation) {
	const ns = "tainted"
	createNamespace(t, f, ns)
	g := startRegisteredGate(t, f, "carbongate-tainted", append(heldArgs(t, f, holdStart), "--karmada-schedule-ahead", taintedAhead.String())...)
	_, clk := decideHeld(t, g, f)
	createJob(t, f, ns, "tainted", map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"})
	b := waitBinding(t, f, ns, "tainted-job", labelled(hold.Held))
	decided := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	dec, err := hold.Parse(b.GetAnnotations())
	if err != nil {
		t.Fatal(err)
	}
	if err := newJob(f, ns, "cornered", map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"}); err != nil {
		t.Fatal(err)
	}
	createPlacedPolicy(t, f, ns, "cornered", map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": "cornered"},
		map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{decided.Name}}})
	cb := waitBinding(t, f, ns, "cornered-job", labelled(hold.Held))
	if a := cb.GetAnnotations(); a[admission.AnnotationCluster] != decided.Name || a[hold.AnnotationStart] != dec.Start.Format(time.RFC3339) {
		t.Fatalf("cornered: decided %s at %s, want %s at %s as the other", a[admission.AnnotationCluster], a[hold.AnnotationStart], decided.Name, dec.Start.Format(time.RFC3339))
	}
	if time.Until(clk.wallOf(dec.ReleaseAt())) < taintedAhead+time.Second {
		t.Fatalf("released %v from now: too soon to taint its member before it is staged %v ahead", time.Until(clk.wallOf(dec.ReleaseAt())), taintedAhead)
	}
	taint(t, f, decided.Name, `[{"key":"example.com/maintenance","effect":"NoSchedule"}]`)
	untainted := false
	t.Cleanup(func() {
		if !untainted {
			taint(t, f, decided.Name, "null")
		}
	})

	b = waitBinding(t, f, ns, "tainted-job", labelled(hold.Released))
	moved := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	if moved == nil || moved.Name == decided.Name {
		t.Fatalf("released in %s, want moved off tainted %s", b.GetAnnotations()[admission.AnnotationCluster], decided.Name)
	}
	waitJob(t, moved, ns, "tainted")
	t.Logf("figures: the Job reached %s %v after its decided second (decided for tainted %s)",
		moved.Name, time.Since(clk.wallOf(dec.ReleaseAt())).Round(time.Millisecond), decided.Name)
	if in := jobIn(t, f, ns, "tainted"); len(in) != 1 || in[0] != moved.Name {
		t.Fatalf("Job tainted/tainted in %v, want in %s only", in, moved.Name)
	}
	if at := b.GetAnnotations()[hold.AnnotationStart]; at != dec.Start.Format(time.RFC3339) {
		t.Errorf("start %s after the move, want the decided %s", at, dec.Start.Format(time.RFC3339))
	}
	t.Logf("the binding's event: %s", waitBindingEvent(t, f, ns, "tainted-job", "MovedOff",
		decided.Name+": taint example.com/maintenance:NoSchedule", "member cluster "+moved.Name))
	if n := g.metric(t, `carbongate_controller_redecisions_total{kind="resourcebinding",move="unavailable",outcome="moved"}`); n != 1 {
		t.Errorf("moves off an unavailable member %v, want 1", n)
	}

	// The cornered Job: released where it was decided, it waits there.
	waitBinding(t, f, ns, "cornered-job", labelled(hold.Released))
	time.Sleep(3 * time.Second) // Karmada's scheduler has tried
	if in := jobIn(t, f, ns, "cornered"); len(in) > 0 {
		t.Fatalf("Job tainted/cornered in %v while its only member %s is tainted, want in none", in, decided.Name)
	}
	waitBindingEvent(t, f, ns, "cornered-job", "Unplaceable", decided.Name+": taint example.com/maintenance:NoSchedule")
	if n := g.metric(t, `carbongate_controller_released_unplaceable_total{kind="resourcebinding"}`); n != 1 {
		t.Errorf("unplaceable releases %v, want 1 (the cornered Job)", n)
	}
	if n := g.metric(t, `carbongate_controller_redecisions_total{kind="resourcebinding",move="unavailable",outcome="moved"}`); n != 1 {
		t.Errorf("moves off an unavailable member %v after the cornered Job's release, want still 1", n)
	}
	taint(t, f, decided.Name, "null")
	untainted = true
	start := time.Now()
	waitJob(t, decided, ns, "cornered")
	t.Logf("figures: the cornered Job reached %s %v after its taint was removed", decided.Name, time.Since(start).Round(time.Millisecond))
	if in := jobIn(t, f, ns, "cornered"); len(in) != 1 {
		t.Fatalf("Job tainted/cornered in %v, want in %s only", in, decided.Name)
	}
}

// waitBindingEvent waits for an event of reason on binding ns/name whose
// message says every one of says, and returns its message.
func waitBindingEvent(t *testing.T, f *Federation, ns, name, reason string, says ...string) string {
	t.Helper()
	var msg string
	cluster.Eventually(t, 30*time.Second, "a "+reason+" event on binding "+name, func(ctx context.Context) error {
		evs, err := f.Karmada.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if !slices.ContainsFunc(says, func(s string) bool { return !strings.Contains(e.Message, s) }) {
				msg = e.Message
				return nil
			}
		}
		return fmt.Errorf("events %v", evs.Items)
	})
	return msg
}

// taintedAhead is how long before its release testReleaseTainted's
// binding is staged: after the taint.
const taintedAhead = 2 * time.Second

// taint sets Cluster name's spec.taints to taints (JSON; null: none).
func taint(t *testing.T, f *Federation, name, taints string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := fmt.Appendf(nil, `{"spec":{"taints":%s}}`, taints)
	if _, err := f.Karmada.Dynamic.Resource(ClusterResource).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
