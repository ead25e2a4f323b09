package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/ledger"
)

// heldWorkloads lists the Jobs and bare Pods of namespace ("" for all)
// that carbongate held (label hold.Label), as ledger workloads of signal;
// skipped says which could not be read and why.
func heldWorkloads(ctx context.Context, cs kubernetes.Interface, namespace string, sig forecast.Signal) (ws []ledger.Workload, skipped []string, err error) {
	opts := metav1.ListOptions{LabelSelector: hold.Label}
	jobs, err := cs.BatchV1().Jobs(namespace).List(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("listing Jobs: %w", err)
	}
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("listing Pods: %w", err)
	}
	add := func(kind string, m metav1.ObjectMeta, start, end time.Time) {
		w, why := workloadOf(kind, m, start, end, sig)
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("%s %s/%s: %s", kind, m.Namespace, m.Name, why))
			return
		}
		ws = append(ws, w)
	}
	for _, j := range jobs.Items {
		start, end := jobRun(j)
		add("Job", j.ObjectMeta, start, end)
	}
	for _, p := range pods.Items {
		start, end := podRun(p)
		add("Pod", p.ObjectMeta, start, end)
	}
	return ws, skipped, nil
}

// workloadOf reads a held object's annotations (package hold's contract):
// the decided zone, the declared power, the promised avoided grams; its
// creation is its admission.
func workloadOf(kind string, m metav1.ObjectMeta, start, end time.Time, sig forecast.Signal) (ledger.Workload, string) {
	a := m.Annotations
	zone, err := forecast.ParseZone(a[hold.AnnotationZone])
	if err != nil {
		return ledger.Workload{}, "annotation " + hold.AnnotationZone + ": " + forecast.ErrorMessage(err)
	}
	w := ledger.Workload{Kind: kind, Namespace: m.Namespace, Name: m.Name, Zone: zone, Signal: sig,
		AdmittedAt: m.CreationTimestamp.UTC(), Started: start, Ended: end,
		Deleted: m.DeletionTimestamp != nil && start.IsZero()}
	if v, ok := a[hold.AnnotationPowerWatts]; ok {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || !(p > 0 && p <= 100_000) {
			return ledger.Workload{}, fmt.Sprintf("annotation %s: %q is not a power in watts in (0, 100000]", hold.AnnotationPowerWatts, v)
		}
		w.PowerWatts = p
	}
	w.PromisedGrams, w.HasPromise = hold.AvoidedGrams(a)
	return w, ""
}

// jobRun is a Job's actual run: status.startTime (reset when a suspended
// Job is resumed) to its completion or failure.
func jobRun(j batchv1.Job) (start, end time.Time) {
	if j.Status.StartTime != nil {
		start = j.Status.StartTime.UTC()
	}
	if j.Status.CompletionTime != nil {
		return start, j.Status.CompletionTime.UTC()
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			end = c.LastTransitionTime.UTC()
		}
	}
	return start, end
}

// podRun is a Pod's actual run: status.startTime to the last container's
// finish once the Pod has succeeded or failed.
func podRun(p corev1.Pod) (start, end time.Time) {
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.UTC()
	}
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return start, time.Time{}
	}
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.FinishedAt.After(end) {
			end = t.FinishedAt.UTC()
		}
	}
	return start, end
}
