package controller

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/admission"
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
	vm := newVmTemplate()
	vm.SetAnnotations(map[string]string{admission.AnnotationProvenance: `{"zone":"SE","savings_pct":76.5123}`})
	zone, pct := provenanceOf(vm)
	if zone != "SE" || pct == nil || *pct != 76.5 {
		t.Fatalf("provenanceOf = %q %v, want SE 76.5", zone, pct)
	}
	vm.SetAnnotations(map[string]string{admission.AnnotationProvenance: `{"zone":"SE","savings_pct":null}`})
	if _, pct := provenanceOf(vm); pct != nil {
		t.Fatalf("null saving: %v, want nil", *pct)
	}
	vm.SetAnnotations(nil)
	if zone, pct := provenanceOf(vm); zone != "" || pct != nil {
		t.Fatalf("no annotation: %q %v", zone, pct)
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
