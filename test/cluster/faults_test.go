//go:build interop

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/gateway/hold"
)

// notReadyRegion is the kwok node's region that testNotReady takes down.
const notReadyRegion = "northeurope"

// runHeldPod creates a bare Pod running image's --version on a real
// node's region (swedencentral), checks carbongate gates it with a
// decision, and waits for it to run to Succeeded on a node of the decided
// region once the controller lifts the gate.
func runHeldPod(t *testing.T, c *Cluster, ns, image string) {
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Annotations: map[string]string{hold.AnnotationDuration: "PT1H"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: map[string]string{RegionLabel: "swedencentral"},
			Containers: []corev1.Container{{Name: "work", Image: image, Args: []string{"--version"}, ImagePullPolicy: corev1.PullNever}}}}
	p, err := c.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels[hold.Label] != hold.Held || len(p.Spec.SchedulingGates) != 1 || p.Spec.SchedulingGates[0].Name != hold.Gate {
		t.Fatalf("created: labels %v, gates %v; want held behind %s", p.Labels, p.Spec.SchedulingGates, hold.Gate)
	}
	var done *corev1.Pod
	Eventually(t, 2*time.Minute, "the bare pod Succeeded", func(ctx context.Context) error {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "bare", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("label %s, gates %v, node %q, phase %s", p.Labels[hold.Label], p.Spec.SchedulingGates, p.Spec.NodeName, p.Status.Phase)
		}
		done = p
		return nil
	})
	checkRegion(t, c, done.Spec.NodeName, done.Annotations[hold.AnnotationRegion], "swedencentral")
	if done.Labels[hold.Label] != hold.Released || done.Annotations[hold.AnnotationReleaseReason] != hold.ReasonScheduled {
		t.Errorf("labels %v, release reason %q; want released at its decided start", done.Labels, done.Annotations[hold.AnnotationReleaseReason])
	}
}

// checkRegion checks that node is in the decided region, want.
func checkRegion(t *testing.T, c *Cluster, node, decided, want string) {
	t.Helper()
	n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Labels[RegionLabel]; got != decided || decided != want {
		t.Errorf("ran on %s in region %q; decided %q, want %q", node, got, decided, want)
	}
}

// runGuardedJob creates a held Job whose decision (signed with the chart's decision key, as the
// webhook signs) starts 40 hours after its deadline guard, three hours
// ahead: the controller releases it at the guard, reason deadline-guard,
// and it runs to Completed on the decided region's real node.
func runGuardedJob(t *testing.T, c *Cluster, image string) {
	ctx := context.Background()
	ns := "guard"
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, c, ns)
	signer := chartSigner(t, c)
	now := replayNow(t, c)
	d := hold.Decision{Region: "westeurope", Zone: "NL", Start: now.Add(40 * time.Hour), ReleaseBy: now.Add(3 * time.Hour)}
	a := d.Annotations()
	a[hold.AnnotationSignature] = signer.Sign(hold.Subject{Kind: "Job", Namespace: ns, Name: "late"}, a)
	// The webhook strips carbongate's outputs from a created Job: this one
	// skips it (its objectSelector leaves carbongate.io/schedule=disabled
	// out), as a Job created while the webhook was away would.
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "late", Annotations: a,
		Labels: map[string]string{hold.Label: hold.Held, hold.NamespaceLabel: "disabled"}},
		Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector: map[string]string{RegionLabel: d.Region},
			Containers:   []corev1.Container{{Name: "work", Image: image, Args: []string{"--version"}, ImagePullPolicy: corev1.PullNever}}}}}}
	if _, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := completedPod(t, c, ns, "late")
	checkRegion(t, c, pod.Spec.NodeName, d.Region, "westeurope")
	j, err := c.Kube.BatchV1().Jobs(ns).Get(ctx, "late", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The annotation holds whole seconds: a release at the guard reads as
	// the guard's second.
	at, _ := time.Parse(time.RFC3339, j.Annotations[hold.AnnotationReleasedAt])
	if r := j.Annotations[hold.AnnotationReleaseReason]; r != hold.ReasonGuard || at.Before(d.ReleaseBy.Truncate(time.Second)) || !at.Before(d.Start) {
		t.Errorf("released at %v (%s), want at the guard %v (%s), long before the decided start %v", at, r, d.ReleaseBy, hold.ReasonGuard, d.Start)
	}
}

// chartSigner is a signer with the chart's decision key (its Secret).
func chartSigner(t *testing.T, c *Cluster) *hold.Signer {
	t.Helper()
	s, err := c.Kube.CoreV1().Secrets(chartNS).Get(context.Background(), "carbongate-decision-key", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := hold.NewSigner(s.Data["key"])
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// replayNow is carbongate's replay clock now, as its API says (GET
// /v1/zones through the API server's proxy to its Service).
func replayNow(t *testing.T, c *Cluster) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := c.Kube.CoreV1().Services(chartNS).ProxyGet("https", "carbongate", "https", "/v1/zones", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /v1/zones through the Service: %v", err)
	}
	var body struct {
		Clock struct {
			Now time.Time `json:"now"`
		} `json:"clock"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Clock.Now.IsZero() {
		t.Fatalf("GET /v1/zones: clock.now missing (%v): %.200s", err, b)
	}
	return body.Clock.Now
}

// probeJob is a Job that runs nothing for an hour, with labels.
func probeJob(name string, labels map[string]string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{hold.AnnotationDuration: "PT1H"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "work", Image: "none.invalid/none"}}}}}}
}

// testNotReady takes the kwok node of notReadyRegion down (kwok stops
// playing it, its Ready condition False: the node lifecycle controller
// taints it not-ready), then holds a Job pinned to that region: the
// webhook still holds it (a decision looks past a node's current state),
// the controller releases it at its time, and its pod stays Pending with
// the scheduler's reason (Unschedulable: "untolerated taint(s)", which
// Kubernetes 1.34 does not name) while the Job carries carbongate's
// Unplaceable warning naming the node and its taint.
func testNotReady(t *testing.T, c *Cluster, ns string) {
	ctx := context.Background()
	node := "carbongate-kwok-" + notReadyRegion
	if out, err := c.Kubectl(ctx, "label", "node", node, kwokLabel+"-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"taken down by the test","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`,
		time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	Eventually(t, time.Minute, node+" tainted not-ready", func(ctx context.Context) error {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == "node.kubernetes.io/not-ready" || taint.Key == "node.kubernetes.io/unreachable" {
				return nil
			}
		}
		return fmt.Errorf("taints %v, Ready %v", n.Spec.Taints, nodeReady(n))
	})
	j := probeJob("down", nil)
	j.Spec.Template.Spec.NodeSelector = map[string]string{RegionLabel: notReadyRegion}
	j.Spec.Template.Spec.Tolerations = []corev1.Toleration{KwokToleration}
	j, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Labels[hold.Label] != hold.Held || j.Annotations[hold.AnnotationRegion] != notReadyRegion {
		t.Fatalf("created: labels %v, region %q; want held for %s", j.Labels, j.Annotations[hold.AnnotationRegion], notReadyRegion)
	}
	Eventually(t, 2*time.Minute, "the Job's pod Pending, unschedulable, and the Job's Unplaceable event", func(ctx context.Context) error {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=down"})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		p := pods.Items[0]
		if p.Status.Phase != corev1.PodPending || p.Spec.NodeName != "" {
			return fmt.Errorf("pod %s phase %s on %q, want Pending, unscheduled", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		var why string
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				why = cond.Message
			}
		}
		if !strings.Contains(why, "untolerated taint") {
			return fmt.Errorf("pod %s: conditions %v, want the scheduler's Unschedulable for an untolerated taint", p.Name, p.Status.Conditions)
		}
		ev, err := jobEvent(ctx, c, ns, "down", "Unplaceable")
		if err != nil {
			return err
		}
		if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, notReadyRegion) ||
			(!strings.Contains(ev.Message, node+": taint node.kubernetes.io/not-ready") && !strings.Contains(ev.Message, node+": taint node.kubernetes.io/unreachable")) {
			return fmt.Errorf("event %s %q, want a warning naming %s and %s's not-ready or unreachable taint", ev.Type, ev.Message, notReadyRegion, node)
		}
		t.Logf("pod Pending: %s; the Job's event: %s", why, ev.Message)
		return nil
	})
}

// jobEvent returns the event of reason on Job ns/name.
func jobEvent(ctx context.Context, c *Cluster, ns, name, reason string) (*corev1.Event, error) {
	evs, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Job,involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		return nil, err
	}
	if len(evs.Items) == 0 {
		return nil, fmt.Errorf("no %s event on Job %s/%s", reason, ns, name)
	}
	return &evs.Items[0], nil
}

// testMovedOff: the real node of the region a held Job is decided for is
// cordoned before the Job is created (a decision looks past a node's
// current state: the node may be back by its start). The Job may run in
// either real node's region and is decided for swedencentral, the greener
// by far (SE's grid against NL's); at its release the controller finds no
// node there that can take its pods and moves it, pod template re-pinned
// in the same patch, to westeurope, where the scheduler places its pod on
// the other real node and it runs to Completed, with a MovedOff event.
func testMovedOff(t *testing.T, c *Cluster, ns, image string) {
	ctx := context.Background()
	cordoned, other := c.Nodes[1], c.Nodes[0] // swedencentral, westeurope
	cordon(t, c, cordoned, true)
	t.Cleanup(func() { cordon(t, c, cordoned, false) })
	both := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"westeurope", "swedencentral"}}}}}}}}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "moved-off", Annotations: map[string]string{hold.AnnotationDuration: "PT1H", hold.AnnotationPowerWatts: "250"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Affinity: both,
			Containers: []corev1.Container{{Name: "work", Image: image, Args: []string{"--version"}, ImagePullPolicy: corev1.PullNever}}}}}}
	j, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Labels[hold.Label] != hold.Held || j.Annotations[hold.AnnotationRegion] != "swedencentral" || j.Annotations[hold.AnnotationCandidates] == "" {
		t.Fatalf("created: labels %v, region %q, candidates %q; want held for swedencentral with its candidates",
			j.Labels, j.Annotations[hold.AnnotationRegion], j.Annotations[hold.AnnotationCandidates])
	}
	pod := completedPod(t, c, ns, "moved-off")
	if pod.Spec.NodeName != other {
		t.Errorf("pod ran on %s, want %s (westeurope): %s is cordoned", pod.Spec.NodeName, other, cordoned)
	}
	j, err = c.Kube.BatchV1().Jobs(ns).Get(ctx, "moved-off", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Labels[hold.Label] != hold.Released || j.Annotations[hold.AnnotationRegion] != "westeurope" {
		t.Errorf("after its release: label %q, region %q; want released, moved to westeurope", j.Labels[hold.Label], j.Annotations[hold.AnnotationRegion])
	}
	ev, err := jobEvent(ctx, c, ns, "moved-off", "MovedOff")
	if err != nil {
		t.Fatal(err)
	}
	// Cordoned: the node lifecycle controller also taints it unschedulable,
	// which the check names first once it is there.
	why := []string{cordoned + ": cordoned", cordoned + ": taint node.kubernetes.io/unschedulable:NoSchedule"}
	if ev.Type != corev1.EventTypeWarning || !slices.ContainsFunc(why, func(w string) bool { return strings.Contains(ev.Message, w) }) ||
		!strings.Contains(ev.Message, "in NL (westeurope)") {
		t.Errorf("event %s %q, want a warning naming %s cordoned (%q) and the move to westeurope", ev.Type, ev.Message, cordoned, why)
	}
	t.Logf("the Job's event: %s", ev.Message)
}

// cordon marks node unschedulable (or schedulable again).
func cordon(t *testing.T, c *Cluster, node string, on bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
	if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
