//go:build interop

package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/carbongate/carbongate/deploy/webhook"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
)

// The controller tests run carbongate's replay clock at speed: an hour of
// decisions passes in a wall second.
const (
	replaySpeed = 3600
	ctlMode     = "controller"     // namespaces whose Jobs and Pods go to the test's webhook
	leaseNS     = "carbongate-ctl" // the Lease's namespace
)

// ctlEnv is a control plane set up for the controller: nodes in three
// regions, the webhook registered for Jobs and Pods, RBAC for the
// controller's own identity, a fake provider CRD.
type ctlEnv struct {
	c          *cluster
	bin        string
	tf         tlsFiles
	kubeconfig string       // the controller's identity, bound to deploy/controller/rbac.yaml
	keyFile    string       // --decision-key-file of every replica
	signer     *hold.Signer // signs as the webhook does, with that key
}

func testController(t *testing.T, c *cluster, bin string) {
	e := &ctlEnv{c: c, bin: bin, tf: newTLSFiles(t, c)}
	e.keyFile, e.signer = decisionKey(t)
	e.setup(t)
	g := e.start(t, "--admission")
	e.registerWorkloadWebhook(t, g)
	t.Run("Job", func(t *testing.T) { e.testJob(t, g) })
	t.Run("Pod", func(t *testing.T) { e.testPod(t, g) })
	t.Run("CannotPlace", e.testCannotPlace)
	t.Run("Placement", e.testPlacement)
	t.Run("MaxDelay", e.testMaxDelay)
	t.Run("Shadow", func(t *testing.T) { e.testShadow(t, g) })
	t.Run("Ledger", func(t *testing.T) { e.testLedger(t, g) })
	t.Run("Redecide", func(t *testing.T) { e.testRedecide(t, g) })
	t.Run("RedecidePlace", func(t *testing.T) { e.testRedecidePlace(t, g) })
	t.Run("MovedOff", func(t *testing.T) { e.testMovedOff(t, g) })
	t.Run("AlertMetrics", func(t *testing.T) { testControllerMetricNames(t, g) })
	t.Run("NotOptedIn", func(t *testing.T) { e.testNotOptedIn(t) })
	t.Run("Forged", func(t *testing.T) { e.testForged(t, g) })
	t.Run("VmTemplate", func(t *testing.T) { e.testVmTemplate(t, g) })
	t.Run("VmTemplateOtherKind", func(t *testing.T) { e.testVmTemplateOtherKind(t, g) })
	t.Run("DeadlineGuard", func(t *testing.T) { e.testGuard(t, g) })
	t.Run("DeletedWhileHeld", func(t *testing.T) { e.testDeleted(t, g) })
	t.Run("Failover", func(t *testing.T) { e.testFailover(t, g) })
}

func (e *ctlEnv) setup(t *testing.T) {
	ctx := context.Background()
	for i, region := range []string{"westeurope", "swedencentral", "polandcentral"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{hold.RegionLabel: region}}}
		if _, err := e.c.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.c.namespace(t, leaseNS, nil)
	rbac, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "controller", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.apply(t, rbac, leaseNS, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.apply(t, []byte(fakeVMCRD), "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carbongate-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: carbongate-controller}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carbongate-controller}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carbongate-controller-leader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: carbongate-controller-leader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carbongate-controller}]
---
# The fake provider's objects, as a user adds for the provider they configure.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: carbongate-controller-fakevms}
rules: [{apiGroups: [test.carbongate.io], resources: [fakevms], verbs: [get, create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: carbongate-controller-fakevms}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: carbongate-controller-fakevms}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carbongate-controller}]
`), leaseNS, false); err != nil {
		t.Fatal(err)
	}
	e.kubeconfig = e.c.kubeconfig(t, "carbongate-controller")
}

// fakeVMCRD stands in for a provider's VM kind (Azure Service Operator's
// VirtualMachine, …): a spec and a status with conditions.
const fakeVMCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: fakevms.test.carbongate.io}
spec:
  group: test.carbongate.io
  scope: Namespaced
  names: {kind: FakeVM, listKind: FakeVMList, plural: fakevms, singular: fakevm}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// start runs a carbongate with the controller on the replay clock at
// speed, as the controller's identity.
func (e *ctlEnv) start(t *testing.T, args ...string) *gate {
	t.Helper()
	args = append([]string{"--controller", "--kubeconfig", e.kubeconfig, "--controller-namespace", leaseNS,
		"--replay-speed", fmt.Sprint(replaySpeed), "--cluster-provider", "azure", "--decision-key-file", e.keyFile,
		"--vm-kinds", "azure=test.carbongate.io/FakeVM",
		"--leader-lease-duration", "3s", "--leader-renew-deadline", "2s", "--leader-retry-period", "500ms"}, args...)
	return startGate(t, e.bin, &e.tf, args...)
}

// registerWorkloadWebhook sends the Jobs and Pods of namespaces labelled
// ctlMode to g, as the shipped configuration's workload webhook does.
func (e *ctlEnv) registerWorkloadWebhook(t *testing.T, g *gate) {
	t.Helper()
	mwc, err := webhook.Configuration(webhook.Config{CABundle: e.tf.serverCA.PEM, URL: g.URL + "/v1/admission/mutate"})
	if err != nil {
		t.Fatal(err)
	}
	var wh *admissionregistrationv1.MutatingWebhook
	for i := range mwc.Webhooks {
		if mwc.Webhooks[i].Name == webhook.WorkloadsName {
			wh = &mwc.Webhooks[i]
		}
	}
	if wh == nil {
		t.Fatalf("the shipped configuration has no webhook %s", webhook.WorkloadsName)
	}
	wh.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{labelMode: ctlMode}}
	mwc.Name, mwc.Webhooks = "carbongate-workloads", []admissionregistrationv1.MutatingWebhook{*wh}
	ctx := context.Background()
	if _, err := e.c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.c.namespace(t, "probe-ctl", map[string]string{labelMode: ctlMode, hold.NamespaceLabel: hold.NamespaceEnabled})
	eventually(t, 30*time.Second, "workload webhook called", func() error {
		out, err := e.c.kube.BatchV1().Jobs("probe-ctl").Create(ctx, testJob("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Labels[hold.Label] != hold.Held {
			return fmt.Errorf("not held yet (annotations %v)", out.Annotations)
		}
		return nil
	})
}

func testJob(name string, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}}}
}

// get GETs path from g and returns the body of a 200 answer.
func (g *gate) get(t testing.TB, path string) []byte {
	t.Helper()
	resp, err := g.client.Get(g.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s (%v)", path, resp.StatusCode, b, err)
	}
	return b
}

// now reads g's replay clock.
func (g *gate) now(t testing.TB) time.Time {
	t.Helper()
	var body struct {
		Clock struct {
			Now time.Time `json:"now"`
		} `json:"clock"`
	}
	if err := json.Unmarshal(g.get(t, "/v1/zones"), &body); err != nil {
		t.Fatalf("GET /v1/zones: %v", err)
	}
	return body.Clock.Now
}

// metric scrapes g's /metrics for the value of series (name{labels} as
// exposed); absent fails the test.
func (g *gate) metric(t testing.TB, series string) float64 {
	t.Helper()
	v, ok := services.MetricValue(t, g.get(t, "/metrics"), series)
	if !ok {
		t.Fatalf("no series %s in /metrics", series)
	}
	return v
}

// released waits for a workload to carry the released label and returns
// its annotations.
func released(t *testing.T, timeout time.Duration, what string, get func() (metav1.Object, error)) map[string]string {
	t.Helper()
	var a map[string]string
	eventually(t, timeout, what+" released", func() error {
		o, err := get()
		if err != nil {
			return err
		}
		if o.GetLabels()[hold.Label] != hold.Released {
			return fmt.Errorf("label %s=%q", hold.Label, o.GetLabels()[hold.Label])
		}
		a = o.GetAnnotations()
		return nil
	})
	return a
}

// checkOnTime checks a release happened at or after its time, for reason.
func checkOnTime(t *testing.T, a map[string]string, reason string) {
	t.Helper()
	d, err := hold.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, a[hold.AnnotationReleasedAt])
	if err != nil {
		t.Fatalf("released-at %q: %v", a[hold.AnnotationReleasedAt], err)
	}
	if at.Before(d.ReleaseAt()) {
		t.Errorf("released at %v, before its time %v", at, d.ReleaseAt())
	}
	if got := a[hold.AnnotationReleaseReason]; got != reason {
		t.Errorf("release reason %q, want %q", got, reason)
	}
}

func (e *ctlEnv) testJob(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "hold-jobs"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode, hold.NamespaceLabel: hold.NamespaceEnabled})
	jobs := e.c.kube.BatchV1().Jobs(ns)
	deadline := g.now(t).Add(14 * time.Hour).Format(time.RFC3339)
	j, err := jobs.Create(ctx, testJob("train", map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H", hold.AnnotationPowerWatts: "250"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Labels[hold.Label] != hold.Held {
		t.Fatalf("created: suspend=%v labels=%v, want suspended and held", j.Spec.Suspend, j.Labels)
	}
	d, err := hold.Parse(j.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	terms := j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Values[0] != d.Region {
		t.Fatalf("pods pinned by %+v, want region %s", terms, d.Region)
	}
	t.Logf("held: region %s (zone %s), start %s, release by %s, saving %s %%", d.Region, d.Zone, d.Start.Format(time.RFC3339), d.ReleaseBy.Format(time.RFC3339), j.Annotations[hold.AnnotationSavingsPct])
	a := released(t, 30*time.Second, "job", func() (metav1.Object, error) { return jobs.Get(ctx, "train", metav1.GetOptions{}) })
	checkOnTime(t, a, d.Reason())
	j, err = jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil || j.Spec.Suspend == nil || *j.Spec.Suspend {
		t.Fatalf("after release suspend=%v (%v), want false", j.Spec.Suspend, err)
	}
	e.checkEvents(t, ns, "train", "Released") // "Held" too when its start was not at once
	if d.Reason() == hold.ReasonScheduled {
		want, err := strconv.ParseFloat(a[hold.AnnotationAvoidedGrams], 64)
		if err != nil {
			t.Fatalf("avoided-g %q: %v", a[hold.AnnotationAvoidedGrams], err)
		}
		if got := g.metric(t, `carbongate_controller_avoided_grams_total{workload_namespace="hold-jobs"}`); math.Abs(got-want) > 0.05 {
			t.Errorf("avoided grams counter %v, want the job's %v", got, want)
		}
	}

	// Day 2: an update that drops the decision's annotations gets them back.
	j.Annotations = map[string]string{"resized": "yes"}
	up, err := jobs.Update(ctx, j, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if up.Annotations[hold.AnnotationStart] != a[hold.AnnotationStart] || up.Annotations["resized"] != "yes" {
		t.Fatalf("after an update annotations %v, want the decision kept beside the update's", up.Annotations)
	}
}

func (e *ctlEnv) checkEvents(t *testing.T, ns, name string, reasons ...string) {
	t.Helper()
	eventually(t, 10*time.Second, "events of "+name, func() error {
		evs, err := e.c.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		var got []string
		for _, ev := range evs.Items {
			got = append(got, ev.Reason)
		}
		for _, r := range reasons {
			if !strings.Contains(strings.Join(got, ","), r) {
				return fmt.Errorf("events %v, want %v", got, reasons)
			}
		}
		return nil
	})
}

func (e *ctlEnv) testPod(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "hold-pods"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode, hold.NamespaceLabel: hold.NamespaceEnabled})
	pods := e.c.kube.CoreV1().Pods(ns)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "render", Annotations: map[string]string{hold.AnnotationDeadline: g.now(t).Add(8 * time.Hour).Format(time.RFC3339)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "work", Image: "busybox"}}}}
	got, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.SchedulingGates) != 1 || got.Spec.SchedulingGates[0].Name != hold.Gate {
		t.Fatalf("created with gates %v, want %s", got.Spec.SchedulingGates, hold.Gate)
	}
	d, _ := hold.Parse(got.Annotations)
	a := released(t, 30*time.Second, "pod", func() (metav1.Object, error) { return pods.Get(ctx, "render", metav1.GetOptions{}) })
	checkOnTime(t, a, d.Reason())
	got, err = pods.Get(ctx, "render", metav1.GetOptions{})
	if err != nil || len(got.Spec.SchedulingGates) != 0 {
		t.Fatalf("after release gates %v (%v), want none", got.Spec.SchedulingGates, err)
	}
}

func (e *ctlEnv) testNotOptedIn(t *testing.T) {
	ctx := context.Background()
	ns := "not-opted-in"
	e.c.namespace(t, ns, map[string]string{labelMode: ctlMode})
	j, err := e.c.kube.BatchV1().Jobs(ns).Create(ctx, testJob("web", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if (j.Spec.Suspend != nil && *j.Spec.Suspend) || j.Labels[hold.Label] != "" || len(j.Annotations) != 0 {
		t.Fatalf("a Job of a namespace that did not opt in: suspend=%v labels=%v annotations=%v, want untouched", j.Spec.Suspend, j.Labels, j.Annotations)
	}
}

// decisionKey writes a decision key file and returns it with its signer.
func decisionKey(t testing.TB) (string, *hold.Signer) {
	t.Helper()
	key := []byte("carbongate kube tests' decision key, 32+ bytes")
	f := filepath.Join(t.TempDir(), "decision.key")
	if err := os.WriteFile(f, append(key, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := hold.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

// signed returns d's annotations signed for Job ns/name.
func signed(s *hold.Signer, ns, name string, d hold.Decision) map[string]string {
	a := d.Annotations()
	a[hold.AnnotationSignature] = s.Sign(hold.Subject{Kind: "Job", Namespace: ns, Name: name}, a)
	return a
}

// heldJob creates a Job as the webhook would hold it, with the decision
// given, signed (in a namespace the webhook does not see).
func (e *ctlEnv) heldJob(t *testing.T, ns, name string, d hold.Decision) {
	t.Helper()
	j := testJob(name, signed(e.signer, ns, name, d))
	j.Labels = map[string]string{hold.Label: hold.Held}
	j.Spec.Suspend = new(true)
	if _, err := e.c.kube.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *ctlEnv) testGuard(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "guard"
	e.c.namespace(t, ns, nil)
	now := g.now(t)
	// The decided start lies beyond the deadline guard: released at the guard.
	e.heldJob(t, ns, "late", hold.Decision{Zone: "SE", Start: now.Add(40 * time.Hour), ReleaseBy: now.Add(3 * time.Hour)})
	a := released(t, 30*time.Second, "guarded job", func() (metav1.Object, error) {
		return e.c.kube.BatchV1().Jobs(ns).Get(ctx, "late", metav1.GetOptions{})
	})
	checkOnTime(t, a, hold.ReasonGuard)
	e.checkEvents(t, ns, "late", "Held", "Released")
	if at, _ := time.Parse(time.RFC3339, a[hold.AnnotationReleasedAt]); at.After(now.Add(3*time.Hour + 2*replaySpeed*time.Second)) {
		t.Errorf("released at %v, more than 2 s (wall) after the guard %v", at, now.Add(3*time.Hour))
	}
}

func (e *ctlEnv) testDeleted(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "deleted"
	e.c.namespace(t, ns, nil)
	now := g.now(t)
	e.heldJob(t, ns, "gone", hold.Decision{Zone: "SE", Start: now.Add(3 * time.Hour), ReleaseBy: now.Add(10 * time.Hour)})
	e.heldJob(t, ns, "kept", hold.Decision{Zone: "SE", Start: now.Add(4 * time.Hour), ReleaseBy: now.Add(10 * time.Hour)})
	// Background propagation: batch/v1's default (orphan) waits for a
	// garbage collector, which this control plane does not run.
	bg := metav1.DeletePropagationBackground
	if err := e.c.kube.BatchV1().Jobs(ns).Delete(ctx, "gone", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	released(t, 30*time.Second, "the other job", func() (metav1.Object, error) {
		return e.c.kube.BatchV1().Jobs(ns).Get(ctx, "kept", metav1.GetOptions{})
	})
	if _, err := e.c.kube.BatchV1().Jobs(ns).Get(ctx, "gone", metav1.GetOptions{}); !isNotFound(err) {
		t.Fatalf("the deleted job: %v, want not found (not recreated)", err)
	}
}

var fakeVMs = schema.GroupVersionResource{Group: "test.carbongate.io", Version: "v1", Resource: "fakevms"}

// vmNamespace makes namespace ns with the azure provider template tmpl
// (the value of template.yaml).
func (e *ctlEnv) vmNamespace(t *testing.T, ns, tmpl string) {
	t.Helper()
	e.c.namespace(t, ns, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "carbongate-vm-azure"}, Data: map[string]string{"template.yaml": tmpl}}
	if _, err := e.c.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// vmPhase waits for VmTemplate ns/name to reach phase want, and returns it.
func (e *ctlEnv) vmPhase(t *testing.T, ns, name, want string) *unstructured.Unstructured {
	t.Helper()
	var cur *unstructured.Unstructured
	eventually(t, 30*time.Second, "phase "+want, func() error {
		var err error
		if cur, err = e.c.vmtemplates(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		if p, _, _ := unstructured.NestedString(cur.Object, "status", "phase"); p != want {
			m, _, _ := unstructured.NestedString(cur.Object, "status", "message")
			return fmt.Errorf("phase %q (%s)", p, m)
		}
		return nil
	})
	return cur
}

func (e *ctlEnv) testVmTemplate(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "vms"
	e.vmNamespace(t, ns, `apiVersion: test.carbongate.io/v1
kind: FakeVM
metadata:
  name: {{ .Name }}-vm
  labels: {zone: "{{ .Zone }}"}
spec:
  location: {{ .Region }}
  cpus: {{ .Spec.minCPU }}
  start: "{{ .Start }}"
`)
	start := g.now(t).Add(5 * time.Hour).Truncate(time.Hour)
	vm := vmTemplate(ns, "batch-1", map[string]any{"duration": "PT3H", "maxLatencyMs": int64(0), "originRegion": "westeurope",
		"provider": "azure", "minCPU": int64(4), "schedulingRegion": "swedencentral", "schedulingTime": start.Format(time.RFC3339)})
	if _, err := e.c.vmtemplates(ns).Create(ctx, vm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase := func(want string) *unstructured.Unstructured { return e.vmPhase(t, ns, "batch-1", want) }
	phase("Scheduled")
	cur := phase("Released")
	fvm, err := e.c.dyn.Resource(fakeVMs).Namespace(ns).Get(ctx, "batch-1-vm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if loc, _, _ := unstructured.NestedString(fvm.Object, "spec", "location"); loc != "swedencentral" {
		t.Errorf("the provider object's location %q, want swedencentral", loc)
	}
	if owners := fvm.GetOwnerReferences(); len(owners) != 1 || owners[0].UID != cur.GetUID() || owners[0].Controller == nil || !*owners[0].Controller {
		t.Errorf("owner references %+v, want the VmTemplate as controller (deletion propagates)", owners)
	}
	if at, _, _ := unstructured.NestedString(cur.Object, "status", "releasedAt"); at < start.Format(time.RFC3339) {
		t.Errorf("released at %s, before its start %s", at, start.Format(time.RFC3339))
	}
	fvm.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "message": "running"}}}
	if _, err := e.c.dyn.Resource(fakeVMs).Namespace(ns).UpdateStatus(ctx, fvm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase("Provisioned")
	e.checkEvents(t, ns, "batch-1", "Scheduled", "Released", "Provisioned")
}

// testFailover: a second replica waits; the leader stops (releasing its
// Lease) while a Job is held; the second releases it on time, once.
func (e *ctlEnv) testFailover(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "failover"
	e.c.namespace(t, ns, nil)
	// Each process replays from its --replay-start: the standby starts
	// where g's clock is now (later flags win), so that g's decision falls
	// hours, not the suite's duration × replaySpeed, ahead of the standby's.
	standby := e.start(t, "--admission", "--replay-start", g.now(t).Format(time.RFC3339))
	lease := func() string {
		l, err := e.c.kube.CoordinationV1().Leases(leaseNS).Get(ctx, "carbongate-controller", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	first := lease()
	if first == "" {
		t.Fatal("no Lease holder")
	}
	now := g.now(t)
	e.heldJob(t, ns, "handover", hold.Decision{Zone: "SE", Start: now.Add(8 * time.Hour), ReleaseBy: now.Add(20 * time.Hour)})
	g.Kill()
	eventually(t, 20*time.Second, "the standby takes the Lease", func() error {
		if h := lease(); h == first || h == "" {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	a := released(t, 30*time.Second, "job after failover", func() (metav1.Object, error) {
		return e.c.kube.BatchV1().Jobs(ns).Get(ctx, "handover", metav1.GetOptions{})
	})
	checkOnTime(t, a, hold.ReasonScheduled)
	// Events are written after the release, asynchronously: wait for one.
	var evs *corev1.EventList
	eventually(t, 20*time.Second, "the Released event", func() (err error) {
		evs, err = e.c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=handover,reason=Released"})
		if err == nil && len(evs.Items) == 0 {
			err = errors.New("none yet")
		}
		return err
	})
	if len(evs.Items) != 1 || evs.Items[0].Count > 1 {
		t.Errorf("Released events %+v, want exactly one", evs.Items)
	}
	if strings.Contains(g.Log(), `"name":"handover"`) && strings.Contains(g.Log(), `"msg":"released","kind":"job","namespace":"failover"`) {
		t.Errorf("the killed leader released the job too")
	}
	if !strings.Contains(standby.Log(), `"msg":"released"`) {
		t.Errorf("the standby's log does not show the release:\n%s", tail(standby.Log(), 2000))
	}
}

// testControllerMetricNames checks that every carbongate_controller_*
// metric the chart's alerts and dashboard name is exported by a controller
// that has released workloads (test/alerts checks all other names; it runs
// no controller).
func testControllerMetricNames(t *testing.T, g *gate) {
	files := filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate", "files")
	var names []string
	for _, f := range []string{"alerts.yaml", "dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(files, f))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, regexp.MustCompile(`carbongate_controller_[a-z_]+`).FindAllString(string(b), -1)...)
	}
	if len(names) == 0 {
		t.Fatal("the alerts name no controller metric")
	}
	exposed := string(g.get(t, "/metrics"))
	for _, n := range names {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && strings.Contains(exposed, "# TYPE "+b+" histogram\n") {
				base = b
			}
		}
		if !strings.Contains(exposed, "# TYPE "+base+" ") {
			t.Errorf("%s is named by the chart's alerts or dashboard but not exported by the controller", n)
		}
	}
}
