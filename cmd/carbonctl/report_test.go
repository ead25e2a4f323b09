package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/gateway/hold"
)

func held(ns, name, zone string, created time.Time, extra map[string]string) metav1.ObjectMeta {
	a := map[string]string{hold.AnnotationZone: zone, hold.AnnotationPowerWatts: "2000", hold.AnnotationAvoidedGrams: "500"}
	for k, v := range extra {
		a[k] = v
	}
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{hold.Label: hold.Released},
		Annotations: a, CreationTimestamp: metav1.NewTime(created)}
}

func tp(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// reportObjects are a realized Job, a Job not started, a Pod deleted
// before it ran, a realized Pod in another namespace, one with a bad zone.
func reportObjects(t0 time.Time) []runtime.Object {
	done := &batchv1.Job{ObjectMeta: held("team", "done", "DE", t0, nil),
		Status: batchv1.JobStatus{StartTime: tp(t0.Add(10 * time.Hour)), CompletionTime: tp(t0.Add(12 * time.Hour))}}
	waiting := &batchv1.Job{ObjectMeta: held("team", "waiting", "DE", t0.Add(time.Hour), nil)}
	gone := &corev1.Pod{ObjectMeta: held("team", "gone", "DE", t0, nil)}
	gone.DeletionTimestamp, gone.Finalizers = tp(t0.Add(2*time.Hour)), []string{"example.com/keep"}
	pod := &corev1.Pod{ObjectMeta: held("other", "pod", "DE", t0, nil), Status: corev1.PodStatus{
		Phase: corev1.PodSucceeded, StartTime: tp(t0.Add(3 * time.Hour)),
		ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(4 * time.Hour))}}}}}}
	bad := &batchv1.Job{ObjectMeta: held("team", "bad", "D E", t0, nil)}
	return []runtime.Object{done, waiting, gone, pod, bad}
}

// reportDoc is what the tests read of report's JSON output.
type reportDoc struct {
	Workloads []map[string]any `json:"workloads"`
	Totals    []map[string]any `json:"totals"`
}

// reportedJSON runs report with args and --output json against env and
// returns its document and what it wrote to stderr; an error fails t.
func reportedJSON(t *testing.T, env reportEnv, args ...string) (reportDoc, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := reportWith(context.Background(), append(args, "--output", "json"), &out, &errOut, env); err != nil {
		t.Fatalf("%v: %v: %s", args, err, errOut.String())
	}
	var doc reportDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc, errOut.String()
}

func TestReportBundled(t *testing.T) {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	cs := fake.NewSimpleClientset(reportObjects(t0)...)
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return cs, nil }}
	doc, stderr := reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled", "--from", "2021-06-01", "--to", "2021-06-02")
	if !strings.Contains(stderr, "skipped Job team/bad: annotation "+hold.AnnotationZone) {
		t.Errorf("stderr %q does not say the bad Job was skipped", stderr)
	}
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	de := tables["DE"].Series(forecast.SignalLifecycle)
	sum := func(from, to int) float64 { // 2 kW over whole hours
		g := 0.0
		for h := from; h < to; h++ {
			v, _ := de.At(t0.Add(time.Duration(h) * time.Hour))
			g += 2 * v
		}
		return g
	}
	byName := map[string]map[string]any{}
	for _, w := range doc.Workloads {
		byName[w["name"].(string)] = w
	}
	if len(byName) != 4 {
		t.Fatalf("%d workloads, want 4: %v", len(byName), doc.Workloads)
	}
	done := byName["done"]
	// ran 10:00–12:00; at admission it would have run 00:00–02:00.
	if done["status"] != "realized" || !near(done["realized_g"], sum(10, 12)) || !near(done["run_at_admission_g"], sum(0, 2)) ||
		!near(done["realized_avoided_g"], sum(0, 2)-sum(10, 12)) || done["promised_avoided_g"] != 500.0 {
		t.Errorf("done = %v, want realized %v, run at admission %v", done, sum(10, 12), sum(0, 2))
	}
	if done["accounting"] != "location-based average (lifecycle)" || done["power_source"] != "declared" {
		t.Errorf("accounting %v", done["accounting"])
	}
	if w := byName["waiting"]; w["status"] != "pending" || w["realized_avoided_g"] != nil {
		t.Errorf("waiting = %v, want pending without grams", w)
	}
	if w := byName["gone"]; w["status"] != "deleted" {
		t.Errorf("gone = %v, want deleted", w)
	}
	if w := byName["pod"]; w["status"] != "realized" || !near(w["realized_g"], sum(3, 4)) {
		t.Errorf("pod = %v, want realized %v", w, sum(3, 4))
	}
	if len(doc.Totals) != 2 || doc.Totals[1]["namespace"] != "team" || doc.Totals[1]["pending"] != 1.0 ||
		doc.Totals[1]["deleted"] != 1.0 || doc.Totals[1]["promised_avoided_g"] != 1500.0 || doc.Totals[1]["promised_avoided_g_of_realized"] != 500.0 {
		t.Errorf("totals = %v", doc.Totals)
	}
}

func near(got any, want float64) bool {
	g, ok := got.(float64)
	return ok && math.Abs(g-want) < 1e-6
}

func TestReportSelection(t *testing.T) {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	cs := fake.NewSimpleClientset(reportObjects(t0)...)
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return cs, nil }}
	var out, errOut bytes.Buffer
	// waiting was admitted at 01:00: --from 01:00 keeps it alone in team.
	err := reportWith(context.Background(), []string{"--kubeconfig", "x", "--data", "bundled", "--namespace", "team", "--zone", "de", "--from", "2021-06-01T01:00:00Z"}, &out, &errOut, env)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	rows := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(rows) != 5 || !strings.HasPrefix(rows[1], "Job,team,waiting,DE,DE,lifecycle,") || rows[2] != "" || !strings.HasPrefix(rows[4], "team,DE,location-based average (lifecycle),enforce,1,0,0,1,0,0,500,0,0,0,0") {
		t.Fatalf("csv:\n%s", out.String())
	}
}

func TestReportUsage(t *testing.T) {
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { t.Fatal("reached the cluster"); return nil, nil }}
	for _, args := range [][]string{
		{"--data", "bundled"},
		{"--kubeconfig", "x"},
		{"--kubeconfig", "x", "--data", "bundled", "--store", "postgres://h/db"},
		{"--kubeconfig", "x", "--data", "bundled", "--output", "xml"},
		{"--kubeconfig", "x", "--data", "bundled", "--signal", "average"},
		{"--kubeconfig", "x", "--data", "bundled", "--zone", "D E"},
		{"--kubeconfig", "x", "--data", "bundled", "--from", "2021-06-02", "--to", "2021-06-01"},
		{"--kubeconfig", "x", "--data", "bundled", "--from", "June"},
		{"--kubeconfig", "x", "--data", "bundled", "--replay-start", "2021-06-01T00:00:00Z"},
		{"--kubeconfig", "x", "--data", "bundled", "--replay-anchor", "2026-12-07T10:00:00Z"},
		{"--kubeconfig", "x", "--store", "postgres://h/db", "--replay-start", "2021-06-01T00:00:00Z", "--replay-anchor", "2026-12-07T10:00:00Z"},
		{"--kubeconfig", "x", "--data", "bundled", "--replay-start", "June", "--replay-anchor", "2026-12-07T10:00:00Z"},
		{"--kubeconfig", "x", "--data", "bundled", "--replay-start", "2021-06-01T00:00:00Z", "--replay-anchor", "2026-12-07T10:00:00Z", "--replay-speed", "0.5"},
	} {
		err := reportWith(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}, env)
		if !isUsage(err) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

// TestReportShadow: a Job decided in shadow ran as submitted (00:00–02:00);
// the report charges what holding it to its decided start (10:00) would
// have avoided, in its own mode's totals.
func TestReportShadow(t *testing.T) {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	m := held("team", "try", "DE", t0, map[string]string{hold.AnnotationShadow: "true",
		hold.AnnotationStart: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationReleaseBy: t0.Add(20 * time.Hour).Format(time.RFC3339)})
	m.Labels[hold.Label] = hold.Shadow
	shadow := &batchv1.Job{ObjectMeta: m, Status: batchv1.JobStatus{StartTime: tp(t0), CompletionTime: tp(t0.Add(2 * time.Hour))}}
	done := reportObjects(t0)[0]
	cs := fake.NewSimpleClientset(shadow, done)
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return cs, nil }}
	doc, _ := reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled")
	byName := map[string]map[string]any{}
	for _, w := range doc.Workloads {
		byName[w["name"].(string)] = w
	}
	try, enforced := byName["try"], byName["done"]
	// done really ran 10:00–12:00 against admission at 00:00: the same
	// windows as try held to 10:00, so the same grams.
	if try["mode"] != "shadow" || try["status"] != "realized" || enforced["mode"] != "enforce" ||
		!near(try["realized_avoided_g"], enforced["realized_avoided_g"].(float64)) || !near(try["realized_g"], enforced["realized_g"].(float64)) {
		t.Errorf("shadow %v, want the figures of enforced %v", try, enforced)
	}
	if len(doc.Totals) != 2 || doc.Totals[0]["mode"] != "enforce" || doc.Totals[1]["mode"] != "shadow" {
		t.Errorf("totals %v, want one per mode", doc.Totals)
	}
}

// TestReportBaselineZone: a Job placed in SE whose promise ran against PL
// (the cluster's zone) is charged its run at admission in PL, as promised;
// --baseline-zone replaces that zone for every workload.
func TestReportBaselineZone(t *testing.T) {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	moved := &batchv1.Job{ObjectMeta: held("team", "moved", "SE", t0, map[string]string{hold.AnnotationBaselineZone: "PL"}),
		Status: batchv1.JobStatus{StartTime: tp(t0.Add(10 * time.Hour)), CompletionTime: tp(t0.Add(12 * time.Hour))}}
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	sum := func(zone forecast.Zone, from, to int) float64 { // 2 kW over whole hours
		s, g := tables[zone].Series(forecast.SignalLifecycle), 0.0
		for h := from; h < to; h++ {
			v, _ := s.At(t0.Add(time.Duration(h) * time.Hour))
			g += 2 * v
		}
		return g
	}
	for _, tc := range []struct {
		flags []string
		base  forecast.Zone
	}{{nil, "PL"}, {[]string{"--baseline-zone", "DE"}, "DE"}} {
		env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return fake.NewSimpleClientset(moved), nil }}
		doc, _ := reportedJSON(t, env, append([]string{"--kubeconfig", "x", "--data", "bundled"}, tc.flags...)...)
		w := doc.Workloads[0]
		if w["baseline_zone"] != string(tc.base) || !near(w["realized_g"], sum("SE", 10, 12)) || !near(w["run_at_admission_g"], sum(tc.base, 0, 2)) {
			t.Errorf("%v: %v, want run at admission in %s: %v g, realized in SE %v g", tc.flags, w, tc.base, sum(tc.base, 0, 2), sum("SE", 10, 12))
		}
	}
}

// TestReportEstimatedPower: a workload that declared no power is charged
// at the power the webhook estimated from its requests, labelled so.
func TestReportEstimatedPower(t *testing.T) {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	m := held("team", "sized", "DE", t0, map[string]string{hold.AnnotationEstimatedPower: "37.5"})
	delete(m.Annotations, hold.AnnotationPowerWatts)
	j := &batchv1.Job{ObjectMeta: m, Status: batchv1.JobStatus{StartTime: tp(t0.Add(10 * time.Hour)), CompletionTime: tp(t0.Add(12 * time.Hour))}}
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return fake.NewSimpleClientset(j), nil }}
	doc, _ := reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled")
	if w := doc.Workloads[0]; w["status"] != "realized" || w["power_watts"] != 37.5 || w["power_source"] != "estimated" || !near(w["energy_kwh"], 0.075) {
		t.Errorf("%v, want realized at 37.5 W estimated (0.075 kWh)", w)
	}
}
