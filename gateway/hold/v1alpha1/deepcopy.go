package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The deep copies controller-gen's object generator would write, by hand:
// a runtime.Object must copy itself for the client's cache. TestDeepCopy
// checks that a copy shares no memory with its original.

// copyOf returns a copy of in made by into, nil for nil.
func copyOf[T any](in *T, into func(in, out *T)) *T {
	if in == nil {
		return nil
	}
	out := new(T)
	into(in, out)
	return out
}

// DeepCopyInto copies in into out.
func (in *VmTemplate) DeepCopyInto(out *VmTemplate) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of in.
func (in *VmTemplate) DeepCopy() *VmTemplate { return copyOf(in, (*VmTemplate).DeepCopyInto) }

// DeepCopyObject is runtime.Object's.
func (in *VmTemplate) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies in into out.
func (in *VmTemplateList) DeepCopyInto(out *VmTemplateList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]VmTemplate, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of in.
func (in *VmTemplateList) DeepCopy() *VmTemplateList {
	return copyOf(in, (*VmTemplateList).DeepCopyInto)
}

// DeepCopyObject is runtime.Object's.
func (in *VmTemplateList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies in into out.
func (in *VmTemplateSpec) DeepCopyInto(out *VmTemplateSpec) {
	*out = *in
	if in.MinCPU != nil {
		v := *in.MinCPU
		out.MinCPU = &v
	}
	for _, p := range []struct{ in, out **string }{
		{&in.MinRAM, &out.MinRAM}, {&in.Deadline, &out.Deadline}, {&in.Provider, &out.Provider},
		{&in.Residency, &out.Residency}, {&in.SchedulingRegion, &out.SchedulingRegion},
		{&in.SchedulingTime, &out.SchedulingTime}, {&in.InstanceType, &out.InstanceType},
	} {
		if *p.in != nil {
			v := **p.in
			*p.out = &v
		}
	}
}

// DeepCopyInto copies in into out.
func (in *VmTemplateStatus) DeepCopyInto(out *VmTemplateStatus) {
	*out = *in
	if in.SavingsPct != nil {
		v := *in.SavingsPct
		out.SavingsPct = &v
	}
	if in.Resource != nil {
		r := *in.Resource
		out.Resource = &r
	}
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopy returns a copy of in.
func (in *VmTemplateSpec) DeepCopy() *VmTemplateSpec {
	return copyOf(in, (*VmTemplateSpec).DeepCopyInto)
}

// DeepCopy returns a copy of in.
func (in *VmTemplateStatus) DeepCopy() *VmTemplateStatus {
	return copyOf(in, (*VmTemplateStatus).DeepCopyInto)
}
