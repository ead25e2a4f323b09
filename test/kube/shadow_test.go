//go:build interop

package kube

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
)

// testShadow: a Job of a namespace labelled carbongate.io/mode=shadow (and
// nothing else) is admitted unsuspended, unpinned, labelled shadow with the
// decision annotations and the shadow marker, counted as a shadow
// decision; the controller leaves it alone past its decided start.
func (e *ctlEnv) testShadow(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "shadow-jobs"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode, hold.NamespaceModeLabel: hold.ModeShadow})
	jobs := e.c.kube.BatchV1().Jobs(ns)
	deadline := g.now(t).Add(14 * time.Hour).Format(time.RFC3339)
	job := testJob("train", map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H", hold.AnnotationPowerWatts: "250"})
	// The webhook reads namespaces from the controller's cache: wait until
	// it knows this one (dry runs are not counted).
	eventually(t, 10*time.Second, "namespace "+ns+" seen by the webhook", func() error {
		out, err := jobs.Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Annotations[hold.AnnotationShadow] != "true" {
			return fmt.Errorf("annotations %v", out.Annotations)
		}
		return nil
	})
	j, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if (j.Spec.Suspend != nil && *j.Spec.Suspend) || j.Labels[hold.Label] != hold.Shadow || j.Spec.Template.Spec.Affinity != nil {
		t.Fatalf("created: suspend=%v labels=%v affinity=%+v, want the Job as submitted", j.Spec.Suspend, j.Labels, j.Spec.Template.Spec.Affinity)
	}
	d, err := hold.Parse(j.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if j.Annotations[hold.AnnotationShadow] != "true" || j.Annotations[admission.AnnotationProvenance] == "" || d.Region == "" {
		t.Fatalf("annotations %v, want the decision with a region, the provenance and %s=true", j.Annotations, hold.AnnotationShadow)
	}
	grams, err := strconv.ParseFloat(j.Annotations[hold.AnnotationAvoidedGrams], 64)
	if err != nil {
		t.Fatalf("avoided-g %q: %v", j.Annotations[hold.AnnotationAvoidedGrams], err)
	}
	t.Logf("shadow decision: region %s, start %s, %s %% saving, %v g promised", d.Region, d.Start.Format(time.RFC3339), j.Annotations[hold.AnnotationSavingsPct], grams)
	if n := g.metric(t, fmt.Sprintf(`carbongate_admission_workload_decisions_total{kind="job",mode="shadow",outcome="decided",workload_namespace=%q}`, ns)); n != 1 {
		t.Errorf("shadow decisions %v, want 1", n)
	}
	if got := g.metric(t, fmt.Sprintf(`carbongate_admission_promised_avoided_grams_total{mode="shadow",workload_namespace=%q}`, ns)); math.Abs(got-grams) > 0.05 {
		t.Errorf("shadow promised grams %v, want the Job's %v", got, grams)
	}

	// Past the decided start (and the deadline guard) on the replay clock,
	// the controller has neither released nor stamped it.
	for g.now(t).Before(d.ReleaseAt().Add(time.Hour)) {
		time.Sleep(200 * time.Millisecond)
	}
	j, err = jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Labels[hold.Label] != hold.Shadow || j.Annotations[hold.AnnotationReleasedAt] != "" || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
		t.Errorf("after its decided start: labels %v annotations %v suspend %v, want the controller to leave it alone", j.Labels, j.Annotations, j.Spec.Suspend)
	}
	evs, err := e.c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=train"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if ev.Source.Component != "job-controller" && ev.ReportingController != "job-controller" {
			t.Errorf("event %s %q on a shadow Job, want none from carbongate", ev.Reason, ev.Message)
		}
	}
}
