package v1alpha1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func ptr[T any](v T) *T { return &v }

// full is a VmTemplate with every field set.
func full() *VmTemplate {
	return &VmTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "batch-1", Namespace: "vms", Annotations: map[string]string{AnnotationProvenance: "{}"}},
		Spec: VmTemplateSpec{MinCPU: ptr[int64](4), MinRAM: ptr("16Gi"), Duration: "PT3H", Deadline: ptr("2021-06-03T00:00:00Z"),
			MaxLatencyMs: 40, OriginRegion: "westeurope", Provider: ptr("azure"), Residency: ptr("EU"),
			SchedulingRegion: ptr("swedencentral"), SchedulingTime: ptr("2021-06-02T01:00:00Z"), InstanceType: ptr("Standard_D4s_v5")},
		Status: VmTemplateStatus{Phase: PhaseReleased, SavingsPct: ptr(76.5), Resource: &ResourceRef{APIVersion: "v1", Kind: "X", Name: "batch-1"},
			Conditions: []metav1.Condition{{Type: "Released", Status: metav1.ConditionTrue, Reason: "Scheduled"}}},
	}
}

// TestDeepCopy: a copy equals its original and shares no memory with it:
// changing every pointer, slice and map of the copy leaves the original.
func TestDeepCopy(t *testing.T) {
	t.Parallel()
	in := full()
	list := &VmTemplateList{Items: []VmTemplate{*full()}}
	for _, c := range []struct {
		orig, copy runtime.Object
		vm         func(runtime.Object) *VmTemplate
	}{
		{in, in.DeepCopyObject(), func(o runtime.Object) *VmTemplate { return o.(*VmTemplate) }},
		{list, list.DeepCopyObject(), func(o runtime.Object) *VmTemplate { return &o.(*VmTemplateList).Items[0] }},
	} {
		if !reflect.DeepEqual(c.orig, c.copy) {
			t.Fatalf("%T: the copy differs", c.orig)
		}
		vm := c.vm(c.copy)
		vm.Annotations[AnnotationProvenance] = "changed"
		*vm.Spec.MinCPU = 8
		for _, p := range []*string{vm.Spec.MinRAM, vm.Spec.Deadline, vm.Spec.Provider, vm.Spec.Residency,
			vm.Spec.SchedulingRegion, vm.Spec.SchedulingTime, vm.Spec.InstanceType} {
			*p = "changed"
		}
		*vm.Status.SavingsPct = 0
		vm.Status.Resource.Name = "changed"
		vm.Status.Conditions[0].Reason = "Changed"
		if want := full(); !reflect.DeepEqual(c.vm(c.orig), want) {
			t.Errorf("%T: changing the copy changed the original:\n%+v\nwant\n%+v", c.orig, c.vm(c.orig), want)
		}
	}
	if (*VmTemplate)(nil).DeepCopy() != nil || (*VmTemplateList)(nil).DeepCopy() != nil {
		t.Error("a nil copies to a non-nil")
	}
}

// TestScheme: the scheme knows VmTemplate by its kind.
func TestScheme(t *testing.T) {
	t.Parallel()
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&VmTemplate{})
	if err != nil || len(gvks) != 1 || gvks[0] != GroupVersionKind {
		t.Fatalf("ObjectKinds = %v, %v; want %v", gvks, err, GroupVersionKind)
	}
	if gvks, _, err := s.ObjectKinds(&VmTemplateList{}); err != nil || gvks[0] != GroupVersion.WithKind(ListKind) {
		t.Fatalf("list kinds = %v, %v", gvks, err)
	}
}
