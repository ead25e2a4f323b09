package hold

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/ledger"
)

// MaxPowerWatts bounds AnnotationPowerWatts (a rack's worth): the webhook
// refuses more, and the ledger does not read more.
const MaxPowerWatts = 100_000

// JobWorkload is a held (or released) Job as the ledger sees it: see
// WorkloadOf; its run is JobRun's.
func JobWorkload(j *batchv1.Job, sig forecast.Signal) (ledger.Workload, error) {
	start, end := JobRun(j)
	return WorkloadOf("Job", j.ObjectMeta, start, end, sig)
}

// PodWorkload is a held (or released) bare Pod as the ledger sees it: see
// WorkloadOf; its run is PodRun's.
func PodWorkload(p *corev1.Pod, sig forecast.Signal) (ledger.Workload, error) {
	start, end := PodRun(p)
	return WorkloadOf("Pod", p.ObjectMeta, start, end, sig)
}

// WorkloadOf reads a held object's annotations: the decided zone, the
// promise's baseline zone, the declared power (else the webhook's
// estimate), the promised avoided grams;
// its creation is its
// admission, start and end its actual run as the API reports it. An error
// names the annotation that does not parse.
func WorkloadOf(kind string, m metav1.ObjectMeta, start, end time.Time, sig forecast.Signal) (ledger.Workload, error) {
	a := m.Annotations
	zone, err := forecast.ParseZone(a[AnnotationZone])
	if err != nil {
		return ledger.Workload{}, fmt.Errorf("annotation %s: %s", AnnotationZone, forecast.ErrorMessage(err))
	}
	w := ledger.Workload{Kind: kind, Namespace: m.Namespace, Name: m.Name, Zone: zone, Signal: sig,
		AdmittedAt: m.CreationTimestamp.UTC(), Started: start, Ended: end,
		Deleted: m.DeletionTimestamp != nil && start.IsZero()}
	if v, ok := a[AnnotationBaselineZone]; ok {
		if w.BaselineZone, err = forecast.ParseZone(v); err != nil {
			return ledger.Workload{}, fmt.Errorf("annotation %s: %s", AnnotationBaselineZone, forecast.ErrorMessage(err))
		}
	}
	if w.PowerWatts, w.PowerEstimated, err = Power(a); err != nil {
		return ledger.Workload{}, err
	}
	w.PromisedGrams, w.HasPromise = AvoidedGrams(a)
	return w, nil
}

// Power is the average power in watts of the workload annotated a: the
// power it declared (AnnotationPowerWatts), else the webhook's estimate
// from its requests (AnnotationEstimatedPower, estimated true); 0 when it
// has neither. An error names the annotation that does not parse.
func Power(a map[string]string) (watts float64, estimated bool, err error) {
	for _, k := range []string{AnnotationPowerWatts, AnnotationEstimatedPower} {
		v, ok := a[k]
		if !ok {
			continue
		}
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || !(p > 0 && p <= MaxPowerWatts) {
			return 0, false, fmt.Errorf("annotation %s: %q is not a power in watts in (0, %d]", k, v, MaxPowerWatts)
		}
		return p, k == AnnotationEstimatedPower, nil
	}
	return 0, false, nil
}

// JobRun is a Job's actual run: status.startTime (reset when a suspended
// Job is resumed) to its completion or failure; zero times for what has
// not happened.
func JobRun(j *batchv1.Job) (start, end time.Time) {
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

// PodRun is a Pod's actual run: status.startTime to the last container's
// finish once the Pod has succeeded or failed.
func PodRun(p *corev1.Pod) (start, end time.Time) {
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
