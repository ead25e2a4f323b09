//go:build interop

package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/hold"
)

// testMovedOff: a Job held in germanywestcentral (DE) with candidates in
// the three regions of the other nodes, whose only node there is tainted
// (maintenance, NoSchedule, not tolerated; the nodes' not-ready taint is),
// is moved by the controller at
// its release to the candidate region of lowest forecast (all of whose
// nodes can take it): its decision re-signed for the same start, its pod
// template pinned there in the same patch (the real API server takes it
// while the Job is suspended), a MovedOff warning; then released there.
func (e *ctlEnv) testMovedOff(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "moved-off"
	e.c.namespace(t, ns, nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-de", Labels: map[string]string{hold.RegionLabel: "germanywestcentral"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := e.c.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	cands := []hold.Candidate{{Zone: "DE", Region: "germanywestcentral"}, {Zone: "NL", Region: "westeurope"}, {Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Region: "polandcentral"}}
	// Released at the next forecast hour (a second away on the replay
	// clock): no hourly re-decision comes first.
	start := g.now(t).Truncate(time.Hour).Add(time.Hour)
	d := hold.Decision{Region: "germanywestcentral", Zone: "DE", Start: start, ReleaseBy: start.Add(6 * time.Hour)}
	a := d.Annotations()
	a[hold.AnnotationCandidates] = hold.FormatCandidates(cands)
	a[hold.AnnotationSignature] = e.signer.Sign(hold.Subject{Kind: "Job", Namespace: ns, Name: "detour"}, a)
	a["carbongate.io/provenance"] = fmt.Sprintf(`{"start":%q,"end":%q,"zone":"DE"}`, start.Format(time.RFC3339), start.Add(time.Hour).Format(time.RFC3339))
	j := testJob("detour", a)
	j.Labels = map[string]string{hold.Label: hold.Held}
	j.Spec.Suspend = new(true)
	// No kubelet here: the API server taints every node not-ready.
	j.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}}
	j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"germanywestcentral"}}}}}}}}
	jobs := e.c.kube.BatchV1().Jobs(ns)
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ra := released(t, 60*time.Second, "the Job", func() (metav1.Object, error) { return jobs.Get(ctx, "detour", metav1.GetOptions{}) })
	checkOnTime(t, ra, hold.ReasonScheduled)
	got, err := jobs.Get(ctx, "detour", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved, err := hold.Parse(got.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	to, ok := hold.Find(cands, moved.Zone, "", hold.Candidate{})
	if !ok || moved.Zone == "DE" || moved.Region != to.Region || !moved.Start.Equal(start) {
		evs, _ := e.c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		for _, ev := range evs.Items {
			t.Logf("event %s: %s", ev.Reason, ev.Message)
		}
		t.Fatalf("released with decision %+v, want moved off DE to another candidate, its region, at %v", moved, start)
	}
	if err := e.signer.Verify(hold.Subject{Kind: "Job", Namespace: ns, Name: "detour"}, got.Annotations); err != nil {
		t.Errorf("the moved decision: %v", err)
	}
	terms := got.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Values[0] != to.Region {
		t.Errorf("pods pinned by %+v, want region %s", terms, to.Region)
	}
	e.checkEvents(t, ns, "detour", "MovedOff", "Released")
	if n := g.metric(t, `carbongate_controller_redecisions_total{kind="job",move="unavailable",outcome="moved"}`); n < 1 {
		t.Errorf("moves off an unavailable region %v, want at least 1", n)
	}
	t.Logf("decided for DE (its node tainted), released in %s (%s) at %v", moved.Zone, moved.Region, start.Format(time.RFC3339))
}
