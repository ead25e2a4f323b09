package admission

import (
	"math"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/gateway/hold"
)

// sizedPower estimates the average power, in watts, of wl's pods running
// in region from what they request, for a workload that declares none:
// the vCPUs and memory of the containers that run beside each other (the
// regular ones and restartable init containers), times the pods a Job
// runs at once, by the average coefficients of the region's provider
// (Cloud Carbon Footprint's, forecast/instances) at their average
// utilisation, PUE included. ok is false without a CPU request, without
// coefficients for the provider, or above hold.MaxPowerWatts.
func (w *Webhook) sizedPower(wl workload, region string) (watts float64, ok bool) {
	provider, _, _ := w.regionNamed(region)
	cat, err := instances.Load(provider)
	if err != nil {
		return 0, false
	}
	vcpus, gib := requested(wl.pod)
	if !(vcpus > 0) {
		return 0, false
	}
	n := float64(max(wl.pods, 1))
	watts = cat.EstimateSize(n*vcpus, n*gib, cat.Coefficients().CPUUtilization).Total
	if !(watts > 0 && watts <= hold.MaxPowerWatts) {
		return 0, false
	}
	return math.Round(watts*10) / 10, true
}

// requested returns the vCPUs and GiB of memory pod's containers that run
// beside each other request.
func requested(pod *corev1.PodSpec) (vcpus, gib float64) {
	cs := slices.Clone(pod.Containers)
	for _, c := range pod.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways { // a sidecar
			cs = append(cs, c)
		}
	}
	for _, c := range cs {
		vcpus += c.Resources.Requests.Cpu().AsApproximateFloat64()
		gib += c.Resources.Requests.Memory().AsApproximateFloat64() / (1 << 30)
	}
	return vcpus, gib
}

// jobPods is how many pods of a Job with spec run at once: its parallelism
// (1 when unset), no more than its completions.
func jobPods(spec batchv1.JobSpec) int32 {
	n := int32(1)
	if spec.Parallelism != nil {
		n = *spec.Parallelism
	}
	if spec.Completions != nil {
		n = min(n, *spec.Completions)
	}
	return n
}
