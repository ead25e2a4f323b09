//go:build interop

package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/history"
	"github.com/carbongate/carbongate/models/ledger"
	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// The ledger test's replay clock: half an hour before the hour the
// holding tests' run starts best (holdStart), 360 times as fast as the
// wall clock, so that the release comes within seconds and the hours of
// the run are observed some 10 s after it.
const (
	ledgerStart = "2021-06-02T21:30:00Z"
	ledgerSpeed = 360
)

// testLedger: a Job declaring its power, held by carbongate in the
// federation and released into its decided member, runs there (its status
// written in the member as a job controller would: the members are bare
// API servers); Karmada reflects that run into the binding, and once the
// hours of the run are observed the controller records its realized
// saving on the binding, signed — at the bundled data's observed
// intensity in the decided zone against running at admission in the
// promise's baseline zone, the figures recomputed here by the same
// library from the windows its Event states — and counts it. The same Job
// in a namespace in shadow mode is decided and annotated but runs at once
// where its policy (one member of three) places it, and its record is what
// holding it to its decision would have avoided against that run.
func testLedger(t *testing.T, f *Federation) {
	const ns, trial = "ledger", "ledger-shadow"
	createNamespace(t, f, ns)
	if _, err := f.Karmada.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: trial, Labels: map[string]string{hold.NamespaceModeLabel: hold.ModeShadow}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replay := []string{"--replay-start", ledgerStart, "--replay-anchor", time.Now().UTC().Format(time.RFC3339Nano), "--replay-speed", fmt.Sprint(ledgerSpeed)}
	args := append(controllerArgs(t, f, ledgerSpeed), replay[:4]...)
	g := startRegisteredGate(t, f, "carbongate-ledger", args...)
	signer := keySigner(t, args)
	annotations := map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H", hold.AnnotationPowerWatts: "1000"}
	createJob(t, f, ns, "render", annotations)
	// In shadow: its policy places it in one member of three, at once.
	if err := newJob(f, trial, "render", annotations); err != nil {
		t.Fatal(err)
	}
	createPlacedPolicy(t, f, trial, "render", map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": "render"}, map[string]any{
		"clusterAffinity":   map[string]any{"clusterNames": memberNames(f)},
		"spreadConstraints": []any{map[string]any{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}}})

	b := waitBinding(t, f, ns, "render-job", labelled(hold.Held))
	if p := b.GetAnnotations()[hold.AnnotationPowerWatts]; p != "1000" {
		t.Fatalf("binding annotations %v: want the Job's declared power", b.GetAnnotations())
	}
	sb := waitBinding(t, f, trial, "render-job", func(b *unstructured.Unstructured) error {
		if b.GetLabels()[hold.Label] != hold.Shadow || b.GetAnnotations()[hold.AnnotationShadow] != "true" {
			return fmt.Errorf("labels %v, annotations %v: want decided in shadow", b.GetLabels(), b.GetAnnotations())
		}
		if s, _, _ := unstructured.NestedSlice(b.Object, "spec", "clusters"); len(s) != 1 {
			return fmt.Errorf("scheduled to %v, want one member", s)
		}
		return nil
	})
	ran := f.Member(scheduledTo(t, sb))
	waitJob(t, ran, trial, "render")
	runJob(t, ran, trial, "render", 2*time.Second)

	m := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	waitBinding(t, f, ns, "render-job", labelled(hold.Released))
	waitJob(t, m, ns, "render")
	runJob(t, m, ns, "render", 2*time.Second) // 12 minutes of the replay

	b, got := checkRecord(t, f, signer, ns, "render-job", "")
	t.Logf("figures: realized %v g, run at admission %v g, realized avoided %v g (promised %s g)", got[0], got[1], got[2], b.GetAnnotations()[hold.AnnotationAvoidedGrams])
	if c := g.metric(t, `carbongate_realized_workloads_total{mode="enforce",status="realized",workload_namespace="ledger"}`); c != 1 {
		t.Errorf("realized workloads counter %v, want 1", c)
	}
	reportBinding(t, f, ns, "render-job", b, replay)

	sb, got = checkRecord(t, f, signer, trial, "render-job", ran.Name)
	t.Logf("figures: in shadow, ran in %s; held to its decision (%s) it would have emitted %v g against %v g, avoiding %v g",
		ran.Name, sb.GetAnnotations()[admission.AnnotationCluster], got[0], got[1], got[2])
	if c := g.metric(t, `carbongate_realized_workloads_total{mode="shadow",status="realized",workload_namespace="ledger-shadow"}`); c != 1 {
		t.Errorf("realized shadow workloads counter %v, want 1", c)
	}
}

// scheduledTo is the one member binding b is scheduled to.
func scheduledTo(t *testing.T, b *unstructured.Unstructured) string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(b.Object, "spec", "clusters")
	name, _, _ := unstructured.NestedString(cs[0].(map[string]any), "name")
	return name
}

// checkRecord waits for the controller's signed record on binding ns/name
// and checks it against its Event's windows recomputed here over the
// bundled data: charged in the decided zone against the promise's baseline
// zone or, decided in shadow, against the zone of the member ranIn it ran
// in. It returns the binding and its realized, run-at-admission and
// realized-avoided grams.
func checkRecord(t *testing.T, f *Federation, signer *hold.Signer, ns, name, ranIn string) (*unstructured.Unstructured, []float64) {
	t.Helper()
	subject := hold.Subject{Kind: hold.BindingKind, Namespace: ns, Name: name}
	b := waitBinding(t, f, ns, name, func(b *unstructured.Unstructured) error {
		return signer.VerifyRecord(subject, b.GetAnnotations())
	})
	a := b.GetAnnotations()
	if a[hold.AnnotationRealizedStatus] != string(ledger.Realized) || a[hold.AnnotationRealizedCoverage] != "1.0000" {
		t.Fatalf("%s/%s: record %v, want realized with coverage 1", ns, name, a)
	}
	got := make([]float64, 3)
	for i, k := range []string{hold.AnnotationRealizedGrams, hold.AnnotationRunAtAdmissionGrams, hold.AnnotationRealizedAvoided} {
		v, err := strconv.ParseFloat(a[k], 64)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		got[i] = v
	}
	msg := bindingEvent(t, f, ns, name, "Realized")
	e := regexp.MustCompile(`ran (\S+)–(\S+) in (\S+): .* running at admission \((\S+)\) in (\S+) would`).FindStringSubmatch(msg)
	if e == nil {
		t.Fatalf("event %q does not state the windows", msg)
	}
	baseline := a[hold.AnnotationBaselineZone]
	if ranIn != "" {
		baseline = f.zoneOf(t, ranIn, a)
		if !strings.HasPrefix(msg, "in shadow") {
			t.Errorf("event %q does not say it is a shadow decision's", msg)
		}
	}
	if e[3] != a[hold.AnnotationZone] || e[5] != baseline {
		t.Errorf("charged in %s against %s, want the decided zone %s against %s", e[3], e[5], a[hold.AnnotationZone], baseline)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	w := ledger.Workload{Zone: forecast.Zone(e[3]), BaselineZone: forecast.Zone(e[5]), Signal: forecast.SignalLifecycle, PowerWatts: 1000,
		Started: at(e[1]), Ended: at(e[2]), AdmittedAt: at(e[4])}
	if d := w.Ended.Sub(w.Started); d < 6*time.Minute || d > 30*time.Minute {
		t.Errorf("ran %v of the replay, want about the 12 minutes (2 s of wall time) the member's status says", d)
	}
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ledger.Account(context.Background(), history.New(tables), w)
	if err != nil || want.Status != ledger.Realized {
		t.Fatalf("recomputed: %+v %v", want, err)
	}
	// The Event's times are whole seconds of the replay.
	for i, v := range []float64{*want.RealizedGrams, *want.BaselineGrams, *want.AvoidedGrams} {
		if math.Abs(got[i]-v) > 0.6 {
			t.Errorf("%s=%v, recomputed %v (%s)", hold.Record[2+i], got[i], v, msg)
		}
	}
	return b, got
}

// zoneOf is the grid zone of member, one of the candidates the decision
// annotated a was made among.
func (f *Federation) zoneOf(t *testing.T, member string, a map[string]string) string {
	t.Helper()
	cs, _, err := hold.ParseCandidates(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Cluster == member {
			return c.Zone
		}
	}
	t.Fatalf("member %s is not a candidate of %v", member, a)
	return ""
}

// reportBinding runs carbonctl report on Karmada's API server, reading
// the API's wall times in the replay the controller ran (replay: its
// flags), and checks that it accounts binding b of namespace ns as the
// controller recorded it: realized, the same grams.
func reportBinding(t *testing.T, f *Federation, ns, name string, b *unstructured.Unstructured, replay []string) {
	t.Helper()
	bin := services.GoBuild(t, "carbonctl")
	args := append([]string{"report", "--kubeconfig", f.Karmada.Kubeconfig, "--data", "bundled", "--namespace", ns, "--output", "json"}, replay...)
	cmd := exec.Command(filepath.Join(bin, "carbonctl"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("carbonctl report: %v: %s", err, stderr.String())
	}
	var doc struct {
		Workloads []struct {
			Kind, Name, Zone, Status string
			Avoided                  *float64 `json:"realized_avoided_g"`
		} `json:"workloads"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(doc.Workloads) != 1 {
		t.Fatalf("report %s, want binding %s alone", out, name)
	}
	w := doc.Workloads[0]
	a := b.GetAnnotations()
	recorded, err := strconv.ParseFloat(a[hold.AnnotationRealizedAvoided], 64)
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind != hold.BindingKind || w.Name != name || w.Zone != a[hold.AnnotationZone] || w.Status != string(ledger.Realized) || w.Avoided == nil || math.Abs(*w.Avoided-recorded) > 0.01 {
		t.Fatalf("report entry %+v, want binding %s in %s realized, avoiding the %v g recorded", w, name, a[hold.AnnotationZone], recorded)
	}
}

// runJob writes the status of Job ns/name in member m as a job controller
// would for a run of d starting now (wall clock): started, then complete
// at now + d.
func runJob(t *testing.T, m *Cluster, ns, name string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := m.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	end := metav1.NewTime(start.Add(d))
	j.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &end, Succeeded: 1, Ready: new(int32), Terminating: new(int32),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: end, LastTransitionTime: end},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: end, LastTransitionTime: end},
		}}
	if _, err := m.Kube.BatchV1().Jobs(ns).UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// keySigner is the signer of the decision key the carbongate started with
// args reads (--decision-key-file).
func keySigner(t *testing.T, args []string) *hold.Signer {
	t.Helper()
	i := slices.Index(args, "--decision-key-file")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("no --decision-key-file in %v", args)
	}
	key, err := os.ReadFile(args[i+1])
	if err != nil {
		t.Fatal(err)
	}
	s, err := hold.NewSigner(bytes.TrimSpace(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bindingEvent waits for an Event of reason on binding ns/name on
// Karmada's API server and returns its message.
func bindingEvent(t *testing.T, f *Federation, ns, name, reason string) string {
	t.Helper()
	var msg string
	cluster.Eventually(t, 30*time.Second, fmt.Sprintf("a %s Event on binding %s/%s", reason, ns, name), func(ctx context.Context) error {
		es, err := f.Karmada.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return err
		}
		if len(es.Items) == 0 {
			return fmt.Errorf("none yet")
		}
		msg = es.Items[0].Message
		return nil
	})
	return msg
}
