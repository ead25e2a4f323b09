//go:build interop

package federation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
)

// testReleaseTainted: the member a held Job was placed in is tainted
// NoSchedule (a member cordoned, or NotReady: Karmada taints those the same
// way) before its release, and before it is staged. Karmada's scheduler
// then finds no cluster the narrowed placement allows and leaves it
// unscheduled when carbongate stages it and at its release — the Job goes
// to no other member — until the taint is gone, when the Job appears in
// the decided member. (A member tainted NoSchedule after the staging keeps
// what Karmada scheduled there, as a node keeps its pods.)
func testReleaseTainted(t *testing.T, f *Federation) {
	const ns = "tainted"
	createNamespace(t, f, ns)
	g := startBindingGate(t, f, append(heldArgs(t, f, holdStart), "--karmada-schedule-ahead", taintedAhead.String())...)
	f.RegisterBindingWebhook(t, "carbongate-tainted", g.url+admission.Path, g.caPEM)
	_, clk := decideHeld(t, g, f)
	createJob(t, f, ns, "tainted", map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"})
	b := waitBinding(t, f, ns, "tainted-job", labelled(hold.Held))
	want := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	dec, err := hold.Parse(b.GetAnnotations())
	if err != nil {
		t.Fatal(err)
	}
	if time.Until(clk.wallOf(dec.ReleaseAt())) < taintedAhead+time.Second {
		t.Fatalf("released %v from now: too soon to taint its member before it is staged %v ahead", time.Until(clk.wallOf(dec.ReleaseAt())), taintedAhead)
	}
	taint(t, f, want.Name, `[{"key":"example.com/maintenance","effect":"NoSchedule"}]`)

	waitBinding(t, f, ns, "tainted-job", labelled(hold.Released))
	time.Sleep(3 * time.Second) // Karmada's scheduler has tried
	if in := jobIn(t, f, ns, "tainted"); len(in) > 0 {
		t.Fatalf("Job tainted/tainted in %v while its member %s is tainted, want in none", in, want.Name)
	}
	b = waitBinding(t, f, ns, "tainted-job", func(*unstructured.Unstructured) error { return nil })
	t.Logf("released into tainted %s: Karmada's scheduling condition %v", want.Name, scheduledCondition(b))
	cluster.Eventually(t, 30*time.Second, "an Unplaceable event on the binding", func(ctx context.Context) error {
		evs, err := f.Karmada.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=tainted-job,reason=Unplaceable"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, "taint example.com/maintenance:NoSchedule") {
				return nil
			}
		}
		return fmt.Errorf("events %v", evs.Items)
	})
	if n := g.metric(t, `carbongate_controller_released_unplaceable_total{kind="resourcebinding"}`); n != 1 {
		t.Errorf("unplaceable releases %v, want 1", n)
	}

	taint(t, f, want.Name, "null")
	start := time.Now()
	waitJob(t, want, ns, "tainted")
	t.Logf("figures: the Job reached %s %v after its taint was removed", want.Name, time.Since(start).Round(time.Millisecond))
	if in := jobIn(t, f, ns, "tainted"); len(in) != 1 {
		t.Fatalf("Job tainted/tainted in %v, want in %s only", in, want.Name)
	}
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

// scheduledCondition is the Scheduled condition of binding b (status,
// reason, message), "" when it has none.
func scheduledCondition(b *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(b.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Scheduled" {
			return fmt.Sprintf("%v %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}
