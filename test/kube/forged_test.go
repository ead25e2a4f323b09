//go:build interop

package kube

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/hold"
)

// testForged: carbongate's outputs written by a user are not trusted. The
// webhook replaces a created Job's and restores an updated Job's; the
// controller releases a held Job whose decision it cannot verify at once,
// as invalid, and credits nothing for it.
func (e *ctlEnv) testForged(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "forged"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode, hold.NamespaceLabel: hold.NamespaceEnabled})
	jobs := e.c.kube.BatchV1().Jobs(ns)
	deadline := g.now(t).Add(30 * time.Hour).Format(time.RFC3339)
	in := testJob("inf", map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationPowerWatts: "100",
		hold.AnnotationAvoidedGrams: "+Inf", hold.AnnotationReleaseReason: hold.ReasonScheduled})
	j, err := jobs.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := j.Annotations[hold.AnnotationAvoidedGrams]; v == "+Inf" || j.Annotations[hold.AnnotationReleaseReason] != "" {
		t.Fatalf("created with avoided-g %q, release-reason %q: the user's kept", v, j.Annotations[hold.AnnotationReleaseReason])
	}
	if err := e.signer.Verify(hold.Subject{Kind: "Job", Namespace: ns, Name: "inf"}, j.Annotations); err != nil {
		t.Fatalf("the webhook's decision: %v", err)
	}

	// Moving the start, raising the credit, relabelling it released while
	// suspended: all put back.
	start := j.Annotations[hold.AnnotationStart]
	j.Annotations[hold.AnnotationStart] = g.now(t).Format(time.RFC3339)
	j.Annotations[hold.AnnotationAvoidedGrams] = "1e308"
	j.Labels[hold.Label] = hold.Released
	up, err := jobs.Update(ctx, j, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up.Annotations[hold.AnnotationStart] != start || up.Annotations[hold.AnnotationAvoidedGrams] == "1e308" || up.Labels[hold.Label] != hold.Held {
		t.Fatalf("after the edit: start %q (was %q), avoided-g %q, label %q: want the decision kept, held",
			up.Annotations[hold.AnnotationStart], start, up.Annotations[hold.AnnotationAvoidedGrams], up.Labels[hold.Label])
	}

	// A hand-made held Job where the webhook does not look: its decision
	// is not signed, so it is released at once and not credited.
	other := "forged-elsewhere"
	e.c.namespace(t, other, nil)
	now := g.now(t)
	d := hold.Decision{Zone: "SE", Start: now.Add(6 * time.Hour), ReleaseBy: now.Add(20 * time.Hour)}
	a := d.Annotations()
	a[hold.AnnotationAvoidedGrams] = "1e308"
	a[hold.AnnotationSignature] = e.signer.Sign(hold.Subject{Kind: "Job", Namespace: other, Name: "someone-elses"}, a)
	h := testJob("hand-made", a)
	h.Labels = map[string]string{hold.Label: hold.Held}
	h.Spec.Suspend = new(true)
	if _, err := e.c.kube.BatchV1().Jobs(other).Create(ctx, h, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := released(t, 30*time.Second, "hand-made job", func() (metav1.Object, error) {
		return e.c.kube.BatchV1().Jobs(other).Get(ctx, "hand-made", metav1.GetOptions{})
	})
	if r := got[hold.AnnotationReleaseReason]; r != hold.ReasonInvalid {
		t.Errorf("released as %q, want %q", r, hold.ReasonInvalid)
	}
	if at, _ := time.Parse(time.RFC3339, got[hold.AnnotationReleasedAt]); !at.Before(d.Start) {
		t.Errorf("released at %v, not before its forged start %v", at, d.Start)
	}
	e.checkEvents(t, other, "hand-made", "InvalidDecision", "Released")
	series := `carbongate_controller_avoided_grams_total{workload_namespace="` + other + `"}`
	if strings.Contains(string(g.get(t, "/metrics")), series) {
		t.Errorf("%s = %v: the forged decision was credited", series, g.metric(t, series))
	}
	for _, line := range strings.Split(string(g.get(t, "/metrics")), "\n") {
		if v, ok := strings.CutPrefix(line, "carbongate_controller_avoided_grams_total{"); ok {
			f, _ := strconv.ParseFloat(v[strings.LastIndexByte(v, ' ')+1:], 64)
			if math.IsInf(f, 0) || math.IsNaN(f) || f > hold.MaxAvoidedGrams {
				t.Errorf("%s: not a credit carbongate made", line)
			}
		}
	}
}

// testVmTemplateOtherKind: a namespace's provider template that renders a
// RoleBinding to cluster-admin instead of a VM is refused (Failed, naming
// the kind), and nothing is created.
func (e *ctlEnv) testVmTemplateOtherKind(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "vms-other-kind"
	e.vmNamespace(t, ns, `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: "{{ .Name }}-admin"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: vms-other-kind}]
`)
	vm := vmTemplate(ns, "escalate", map[string]any{"duration": "PT1H", "maxLatencyMs": int64(0), "originRegion": "westeurope",
		"provider": "azure", "schedulingRegion": "swedencentral", "schedulingTime": g.now(t).Format(time.RFC3339)})
	if _, err := e.c.vmtemplates(ns).Create(ctx, vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur := e.vmPhase(t, ns, "escalate", "Failed")
	if m, _, _ := unstructured.NestedString(cur.Object, "status", "message"); !strings.Contains(m, "RoleBinding.rbac.authorization.k8s.io") || !strings.Contains(m, "may not create") {
		t.Errorf("message %q, want the RoleBinding refused", m)
	}
	if rbs, err := e.c.kube.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{}); err != nil || len(rbs.Items) != 0 {
		t.Errorf("RoleBindings %v (%v), want none", rbs, err)
	}
}
