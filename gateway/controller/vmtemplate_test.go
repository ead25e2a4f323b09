package controller

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

func TestConditionReason(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"scheduled": "Scheduled", "deadline-guard": "DeadlineGuard", "ProviderReported": "ProviderReported",
		"": "Unknown", "--": "Unknown", "bad reason 42!": "BadReason",
	} {
		if got := conditionReason(in); got != want {
			t.Errorf("conditionReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadyCondition(t *testing.T) {
	t.Parallel()
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Synced", "status": "True"},
		map[string]any{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "creating the VM"},
	}}}}
	c := readyCondition(obj)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Provisioning" || c.Message != "creating the VM" {
		t.Fatalf("readyCondition = %+v, want Ready False Provisioning", c)
	}
	if c := readyCondition(&unstructured.Unstructured{Object: map[string]any{}}); c != nil {
		t.Fatalf("without status: %+v, want nil", c)
	}
}

func TestProvenanceOf(t *testing.T) {
	t.Parallel()
	vm := &v1alpha1.VmTemplate{}
	vm.SetAnnotations(map[string]string{v1alpha1.AnnotationProvenance: `{"zone":"SE","savings_pct":76.5123}`})
	zone, pct := provenanceOf(vm)
	if zone != "SE" || pct == nil || *pct != 76.5 {
		t.Fatalf("provenanceOf = %q %v, want SE 76.5", zone, pct)
	}
	vm.SetAnnotations(map[string]string{v1alpha1.AnnotationProvenance: `{"zone":"SE","savings_pct":null}`})
	if _, pct := provenanceOf(vm); pct != nil {
		t.Fatalf("null saving: %v, want nil", *pct)
	}
	vm.SetAnnotations(nil)
	if zone, pct := provenanceOf(vm); zone != "" || pct != nil {
		t.Fatalf("no annotation: %q %v", zone, pct)
	}
}

func ptr[T any](v T) *T { return &v }

// TestTemplateSpec: a provider template sees the spec as the API server
// stores it: JSON names, integers as integers, an empty optional field
// present and an absent one absent ({{ .Spec.provider }} fails on a
// template without spec.provider).
func TestTemplateSpec(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: TemplatePrefix + "azure"}, Data: map[string]string{TemplateKey: "apiVersion: compute.azure.com/v1api20220301\nkind: VirtualMachine\nspec: {cpus: '{{ .Spec.minCPU }}', ms: '{{ .Spec.maxLatencyMs }}', deadline: '{{ .Spec.deadline }}', origin: {{ .Spec.originRegion }}}"}}
	r := &vmReconciler{kinds: DefaultVMKinds(), reader: newFake().WithObjects(cm).Build()}
	vm := &v1alpha1.VmTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "batch-1"},
		Spec: v1alpha1.VmTemplateSpec{MinCPU: ptr[int64](1000000), MaxLatencyMs: 40, OriginRegion: "westeurope", Deadline: ptr(""), Duration: "PT3H"}}
	obj, err := r.render(context.Background(), vm, vmStatus{Region: "swedencentral"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"cpus": "1000000", "ms": "40", "deadline": "", "origin": "westeurope"}
	if got, _, _ := unstructured.NestedMap(obj.Object, "spec"); !reflect.DeepEqual(got, want) {
		t.Errorf("rendered spec %v, want %v", got, want)
	}
	cm.Data[TemplateKey] = "apiVersion: compute.azure.com/v1api20220301\nkind: VirtualMachine\nspec: {p: '{{ .Spec.provider }}'}"
	r.reader = newFake().WithObjects(cm).Build()
	if _, err := r.render(context.Background(), vm, vmStatus{}); err == nil || !strings.Contains(err.Error(), "provider") {
		t.Errorf("a template reading the absent spec.provider: %v, want an error naming it", err)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	var b backoff
	var got []time.Duration
	for range 8 {
		got = append(got, b.next("ns/a"))
	}
	want := []time.Duration{retryEvery, 2 * retryEvery, 4 * retryEvery, 8 * retryEvery, 16 * retryEvery, retryMax, retryMax, retryMax}
	if !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	if d := b.next("ns/b"); d != retryEvery {
		t.Fatalf("another key starts at %v, want %v", d, retryEvery)
	}
	b.reset("ns/a")
	if d := b.next("ns/a"); d != retryEvery {
		t.Fatalf("after a success %v, want %v", d, retryEvery)
	}
}
