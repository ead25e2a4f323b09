package admission

import (
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/gateway/hold"
)

// TestSizedPower: a held Job that declares no power is sized from what
// its pods request (2 vCPUs and 4 GiB each, a sidecar's 0.5 vCPU and
// 1 GiB, two pods at once: parallelism 3 within 2 completions) by its
// region's provider's coefficients; the estimate is recorded, signed, and
// carries the promise's grams. A declared power wins; a Job that requests
// no CPU is not sized.
func TestSizedPower(t *testing.T) {
	t.Parallel()
	azure, err := instances.Load("azure")
	if err != nil {
		t.Fatal(err)
	}
	want := azure.EstimateSize(5, 10, azure.Coefficients().CPUUtilization).Total
	w := workloadHook(t, &fakeScheduler{ranking: []forecast.Zone{"DE"}}, fakeCluster{regions: []string{"westeurope", "germanyn"}, ns: optedIn()}, "")
	opted := map[string]string{hold.AnnotationDeadline: t0.Add(10 * time.Hour).Format(time.RFC3339), hold.AnnotationDuration: "PT3H"}
	sized := func(annotations map[string]string, cpu string) *batchv1.Job {
		j := job("batch", annotations, false)
		j.Spec.Parallelism, j.Spec.Completions = new(int32(3)), new(int32(2))
		if cpu != "" {
			j.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("4Gi")}
			j.Spec.Template.Spec.InitContainers = []corev1.Container{
				{Name: "once", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}},
				{Name: "sidecar", Image: "busybox", RestartPolicy: new(corev1.ContainerRestartPolicyAlways),
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
			}
		}
		return j
	}
	var got batchv1.Job
	admitInto(t, w, workloadRequest(t, admissionv1.Create, sized(opted, "2"), nil), &got)
	est, err := strconv.ParseFloat(got.Annotations[hold.AnnotationEstimatedPower], 64)
	if err != nil || est-want > 0.05 || want-est > 0.05 {
		t.Fatalf("estimated power %q, want %.1f W", got.Annotations[hold.AnnotationEstimatedPower], want)
	}
	// The fake's baseline and decision are 120 and 101.25 g/kWh apart.
	if g, _ := strconv.ParseFloat(got.Annotations[hold.AnnotationAvoidedGrams], 64); g-est*3/1000*18.75 > 0.05 || est*3/1000*18.75-g > 0.05 {
		t.Errorf("avoided %s g, want %.1f W for 3 h × 18.75 g/kWh", got.Annotations[hold.AnnotationAvoidedGrams], est)
	}
	if err := testSigner.Verify(hold.Subject{Kind: "Job", Namespace: "batch", Name: "train"}, got.Annotations); err != nil {
		t.Errorf("signature with the estimate: %v", err)
	}

	declared := map[string]string{hold.AnnotationPowerWatts: "400"}
	for k, v := range opted {
		declared[k] = v
	}
	for name, j := range map[string]*batchv1.Job{"declared": sized(declared, "2"), "no CPU request": sized(opted, "")} {
		got = batchv1.Job{}
		admitInto(t, w, workloadRequest(t, admissionv1.Create, j, nil), &got)
		if v, ok := got.Annotations[hold.AnnotationEstimatedPower]; ok {
			t.Errorf("%s: estimated %s W", name, v)
		}
		if _, ok := got.Annotations[hold.AnnotationStart]; !ok {
			t.Errorf("%s: not held: %v", name, got.Annotations)
		}
	}
}
