//go:build interop

package kube

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/history"
	"github.com/carbongate/carbongate/models/ledger"
)

// testLedger: a held Pod released by the controller, then run (its status
// written as a kubelet would), gets the controller's signed record through
// the webhook: realized at the bundled data's observed intensity over its
// actual run, against running at admission, the figures the Event states
// recomputed here by the same library, and the realized counters. A record
// forged on a Pod the webhook never sees is not trusted: the controller
// writes its own. A held Pod deleted before it ran is counted apart. A
// shadow decision gets the record of what enforcing it would have done.
func (e *ctlEnv) testLedger(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "ledger"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode, hold.NamespaceLabel: hold.NamespaceEnabled})
	pods := e.c.kube.CoreV1().Pods(ns)
	e.createSeen(t, ns, kilowattPod("render", g.now(t).Add(4*time.Hour)), hold.Held)
	released(t, 30*time.Second, "pod", func() (metav1.Object, error) { return pods.Get(ctx, "render", metav1.GetOptions{}) })
	e.run(t, ns, "render", 2*time.Second) // two hours of the replay

	a := e.recorded(t, ns, "render", "Pod")
	if a[hold.AnnotationRealizedStatus] != string(ledger.Realized) || a[hold.AnnotationRealizedCoverage] != "1.0000" {
		t.Fatalf("record %v, want realized with coverage 1", a)
	}
	got := gramsOf(t, a)
	if math.Abs(got[2]-(got[1]-got[0])) > 0.011 {
		t.Errorf("realized-avoided %v ≠ run-at-admission %v − realized %v", got[2], got[1], got[0])
	}
	// The Event states the windows charged (in the replay's time): the
	// same library over the bundled data gives the same grams.
	msg := e.eventMessage(t, ns, "render", "Realized")
	m := regexp.MustCompile(`ran (\S+)–(\S+) in (\S+): .* running at admission \((\S+)\) in (\S+) would`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("event %q does not state the windows", msg)
	}
	if m[5] != a[hold.AnnotationBaselineZone] {
		t.Errorf("run at admission charged in %s, want the promise's baseline zone %q", m[5], a[hold.AnnotationBaselineZone])
	}
	w := ledger.Workload{Zone: forecast.Zone(m[3]), BaselineZone: forecast.Zone(m[5]), Signal: forecast.SignalLifecycle, PowerWatts: 1000,
		Started: mustTime(t, m[1]), Ended: mustTime(t, m[2]), AdmittedAt: mustTime(t, m[4])}
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ledger.Account(ctx, history.New(tables), w)
	if err != nil || want.Status != ledger.Realized {
		t.Fatalf("recomputed: %+v %v", want, err)
	}
	// The Event's times are whole seconds: 1 kW for a second is under 0.3 g.
	for i, v := range []float64{*want.RealizedGrams, *want.BaselineGrams, *want.AvoidedGrams} {
		if math.Abs(got[i]-v) > 0.6 {
			t.Errorf("%s=%v, recomputed %v (%s)", hold.Record[2+i], got[i], v, msg)
		}
	}
	if d := w.Ended.Sub(w.Started); d < time.Hour || d > 3*time.Hour {
		t.Errorf("ran %v of the replay, want about the 2 s (wall) the status says", d)
	}
	if c := g.metric(t, `carbongate_realized_workloads_total{mode="enforce",status="realized",workload_namespace="ledger"}`); c != 1 {
		t.Errorf("realized workloads counter %v, want 1", c)
	}
	name := `carbongate_realized_avoided_grams_total{mode="enforce",workload_namespace="ledger"}`
	if got[2] < 0 {
		name = `carbongate_realized_added_grams_total{mode="enforce",workload_namespace="ledger"}`
	}
	if c := g.metric(t, name); math.Abs(c-math.Abs(got[2])) > 0.01 {
		t.Errorf("%s=%v, want %v", name, c, math.Abs(got[2]))
	}

	e.testLedgerSized(t, ns, g)
	e.testLedgerShadow(t, g, tables)

	// Forged where the webhook does not look: recomputed and signed.
	other := "ledger-unwatched"
	e.c.namespace(t, other, nil)
	now := g.now(t)
	forged := map[string]string{hold.AnnotationRealizedStatus: "realized", hold.AnnotationRealizedCoverage: "1.0000",
		hold.AnnotationRealizedGrams: "0.00", hold.AnnotationRunAtAdmissionGrams: "100000000.00", hold.AnnotationRealizedAvoided: "100000000.00",
		hold.AnnotationRecordSignature: "forged", hold.AnnotationPowerWatts: "1000"}
	e.heldPod(t, other, "forged", hold.Decision{Zone: "SE", Start: now.Add(time.Hour), ReleaseBy: now.Add(10 * time.Hour)}, forged)
	released(t, 30*time.Second, "forged pod", func() (metav1.Object, error) {
		return e.c.kube.CoreV1().Pods(other).Get(ctx, "forged", metav1.GetOptions{})
	})
	e.run(t, other, "forged", time.Second)
	a = e.recorded(t, other, "forged", "Pod")
	if a[hold.AnnotationRealizedAvoided] == forged[hold.AnnotationRealizedAvoided] {
		t.Errorf("the forged record was kept: %v", a)
	}

	// Deleted while held: no record, counted apart.
	e.heldPod(t, other, "dropped", hold.Decision{Zone: "SE", Start: now.Add(30 * time.Hour), ReleaseBy: now.Add(40 * time.Hour)}, map[string]string{hold.AnnotationPowerWatts: "1000"})
	if err := e.c.kube.CoreV1().Pods(other).Delete(ctx, "dropped", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	e.countedOnce(t, g, "deleted")

	// Released, started, deleted while it runs: no record, counted gone.
	e.heldPod(t, other, "cut", hold.Decision{Zone: "SE", Start: now.Add(time.Hour), ReleaseBy: now.Add(10 * time.Hour)}, map[string]string{hold.AnnotationPowerWatts: "1000"})
	released(t, 30*time.Second, "cut pod", func() (metav1.Object, error) {
		return e.c.kube.CoreV1().Pods(other).Get(ctx, "cut", metav1.GetOptions{})
	})
	p, err := e.c.kube.CoreV1().Pods(other).Get(ctx, "cut", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: new(metav1.Now())}
	if _, err := e.c.kube.CoreV1().Pods(other).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.kube.CoreV1().Pods(other).Delete(ctx, "cut", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	e.countedOnce(t, g, "gone")
}

// countedOnce waits for carbongate_realized_workloads_total of status in
// namespace ledger-unwatched to read 1.
func (e *ctlEnv) countedOnce(t *testing.T, g *gate, status string) {
	t.Helper()
	series := fmt.Sprintf(`carbongate_realized_workloads_total{mode="enforce",status=%q,workload_namespace="ledger-unwatched"}`, status)
	eventually(t, 10*time.Second, status+" counted", func() error {
		if !strings.Contains(string(g.get(t, "/metrics")), "\n"+series+" 1\n") {
			return fmt.Errorf("no %s 1", series)
		}
		return nil
	})
}

// heldPod creates a Pod as the webhook would hold it, with the decision
// given, signed, and extra annotations (in a namespace the webhook does
// not see).
func (e *ctlEnv) heldPod(t *testing.T, ns, name string, d hold.Decision, extra map[string]string) {
	t.Helper()
	a := d.Annotations()
	a[hold.AnnotationSignature] = e.signer.Sign(hold.Subject{Kind: "Pod", Namespace: ns, Name: name}, a)
	for k, v := range extra {
		a[k] = v
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a, Labels: map[string]string{hold.Label: hold.Held}},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: hold.Gate}}, Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}
	if _, err := e.c.kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// run writes a Pod's status as a kubelet would for a run of d starting now
// (wall clock): started, succeeded, its container finished at now + d.
func (e *ctlEnv) run(t *testing.T, ns, name string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	p, err := e.c.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	end := metav1.NewTime(start.Add(d))
	p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, StartTime: &start,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "work", Image: "busybox", ImageID: "busybox", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: start, FinishedAt: end}}}}}
	if _, err := e.c.kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// recorded waits for the controller's record on a workload and checks its
// signature; it returns the annotations.
func (e *ctlEnv) recorded(t *testing.T, ns, name, kind string) map[string]string {
	t.Helper()
	var a map[string]string
	eventually(t, 30*time.Second, name+" recorded", func() error {
		p, err := e.c.kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		a = p.Annotations
		return e.signer.VerifyRecord(hold.Subject{Kind: kind, Namespace: ns, Name: name}, a)
	})
	return a
}

// gramsOf reads the realized, run-at-admission and realized-avoided grams.
func gramsOf(t *testing.T, a map[string]string) [3]float64 {
	t.Helper()
	var out [3]float64
	for i, k := range []string{hold.AnnotationRealizedGrams, hold.AnnotationRunAtAdmissionGrams, hold.AnnotationRealizedAvoided} {
		v, err := strconv.ParseFloat(a[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, a[k], err)
		}
		out[i] = v
	}
	return out
}

// eventMessage waits for an Event of reason on name and returns its message.
func (e *ctlEnv) eventMessage(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var msg string
	eventually(t, 10*time.Second, reason+" event of "+name, func() error {
		evs, err := e.c.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == reason {
				msg = ev.Message
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", reason, len(evs.Items))
	})
	return msg
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testLedgerShadow: a Pod of a shadow namespace runs as submitted; once
// run, the controller records what holding it to its decision would have
// avoided: its decided window against when it really ran, counted under
// mode shadow.
func (e *ctlEnv) testLedgerShadow(t *testing.T, g *gate, tables map[forecast.Zone]*dataset.Table) {
	ctx := context.Background()
	ns := "ledger-shadow"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode, hold.NamespaceModeLabel: hold.ModeShadow})
	created := e.createSeen(t, ns, kilowattPod("try", g.now(t).Add(6*time.Hour)), hold.Shadow)
	d, err := hold.Parse(created.Annotations)
	if err != nil || len(created.Spec.SchedulingGates) != 0 {
		t.Fatalf("shadow pod: %v, gates %v", err, created.Spec.SchedulingGates)
	}
	e.run(t, ns, "try", time.Second)
	a := e.recorded(t, ns, "try", "Pod")
	got := gramsOf(t, a)
	msg := e.eventMessage(t, ns, "try", "Realized")
	m := regexp.MustCompile(`^in shadow, .*ran (\S+)–(\S+) in (\S+): .* running at admission \((\S+)\) in (\S+) would`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("event %q does not state the windows of a shadow decision", msg)
	}
	if start := mustTime(t, m[1]); !start.Equal(d.ReleaseAt()) {
		t.Errorf("charged from %v, want the decided release %v", start, d.ReleaseAt())
	}
	w := ledger.Workload{Zone: forecast.Zone(m[3]), BaselineZone: forecast.Zone(m[5]), Signal: forecast.SignalLifecycle, PowerWatts: 1000,
		Started: mustTime(t, m[1]), Ended: mustTime(t, m[2]), AdmittedAt: mustTime(t, m[4])}
	want, err := ledger.Account(ctx, history.New(tables), w)
	if err != nil || want.Status != ledger.Realized || math.Abs(*want.AvoidedGrams-got[2]) > 0.6 {
		t.Errorf("recorded %v, recomputed %+v %v", got, want, err)
	}
	if c := g.metric(t, `carbongate_realized_workloads_total{mode="shadow",status="realized",workload_namespace="ledger-shadow"}`); c != 1 {
		t.Errorf("shadow realized workloads %v, want 1", c)
	}
}

// kilowattPod is a 1 kW Pod of an hour due by deadline.
func kilowattPod(name string, deadline time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		hold.AnnotationDeadline: deadline.Format(time.RFC3339), hold.AnnotationDuration: "PT1H", hold.AnnotationPowerWatts: "1000"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}
}

// createSeen creates p in ns once the webhook's namespace cache knows ns
// (dry runs until one comes back labelled label) and returns it.
func (e *ctlEnv) createSeen(t *testing.T, ns string, p *corev1.Pod, label string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	pods := e.c.kube.CoreV1().Pods(ns)
	eventually(t, 10*time.Second, "namespace "+ns+" seen by the webhook", func() error {
		out, err := pods.Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Labels[hold.Label] != label {
			return fmt.Errorf("labels %v", out.Labels)
		}
		return nil
	})
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// testLedgerSized: a Pod of ns that declares no power is sized from what
// it requests (4 vCPUs, 8 GiB): the webhook records the estimate with its
// decision (signed), and the ledger charges it, saying so.
func (e *ctlEnv) testLedgerSized(t *testing.T, ns string, g *gate) {
	ctx := context.Background()
	p := kilowattPod("sized", g.now(t).Add(4*time.Hour))
	delete(p.Annotations, hold.AnnotationPowerWatts)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	created := e.createSeen(t, ns, p, hold.Held)
	est, err := strconv.ParseFloat(created.Annotations[hold.AnnotationEstimatedPower], 64)
	if err != nil || !(est > 0) {
		t.Fatalf("estimated power %q, want a positive estimate from the requests", created.Annotations[hold.AnnotationEstimatedPower])
	}
	if err := e.signer.Verify(hold.Subject{Kind: "Pod", Namespace: ns, Name: "sized"}, created.Annotations); err != nil {
		t.Fatalf("the decision with its estimate: %v", err)
	}
	released(t, 30*time.Second, "sized pod", func() (metav1.Object, error) {
		return e.c.kube.CoreV1().Pods(ns).Get(ctx, "sized", metav1.GetOptions{})
	})
	e.run(t, ns, "sized", time.Second)
	if a := e.recorded(t, ns, "sized", "Pod"); a[hold.AnnotationRealizedStatus] != string(ledger.Realized) {
		t.Fatalf("record %v, want realized", a)
	}
	if msg := e.eventMessage(t, ns, "sized", "Realized"); !strings.Contains(msg, "estimated from what its pods request") {
		t.Errorf("event %q does not say the power was estimated", msg)
	}
	t.Logf("sized pod: %v W estimated from 4 vCPUs and 8 GiB", est)
}
