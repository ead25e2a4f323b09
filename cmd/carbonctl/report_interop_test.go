//go:build interop

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestReportKubePostgres accounts a Job on a real kube-apiserver (its
// status written as the Job controller would) against direct observations
// in PostgreSQL. The API sets its creation (admission) to now, whose hours
// are not observed: the entry is partial (the run's two hours of four
// observed) and carries no grams.
func TestReportKubePostgres(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run test/setup/kube.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, url := pgStore(ctx, t)
	observeDE(t, db, 2)

	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 2 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	suspend := true
	job := &batchv1.Job{ObjectMeta: held("default", "done", "DE", evalDay0, nil), Spec: batchv1.JobSpec{Suspend: &suspend,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	job, err = cs.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admitted := job.CreationTimestamp.UTC()
	start, end := evalDay0.Add(5*time.Hour), evalDay0.Add(7*time.Hour)
	job.Status = batchv1.JobStatus{StartTime: tp(start), CompletionTime: tp(end), Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(end)},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(end)}}}
	if _, err := cs.BatchV1().Jobs("default").UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// admitted now (no observations then): pending, never guessed.
	code, out, errOut := run("report", "--kubeconfig", kubeconfig, "--store", url, "--signal", "direct", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Workloads []map[string]any `json:"workloads"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Workloads) != 1 {
		t.Fatalf("workloads: %s", out)
	}
	w := doc.Workloads[0]
	// two hours run, observed; the 2 h from admission overlap 2 or 3 hours.
	unobserved := 3.0
	if admitted.Equal(admitted.Truncate(time.Hour)) {
		unobserved = 2
	}
	if cov := 2 / (2 + unobserved); w["status"] != "partial" || !near(w["coverage"], cov) || w["realized_g"] != nil || w["started"] != "2021-03-01T05:00:00Z" {
		t.Fatalf("job admitted at %s = %v, want partial with coverage %v (the run's hours observed, the admission's not)", admitted, w, cov)
	}
}
