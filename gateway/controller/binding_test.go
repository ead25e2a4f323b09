package controller

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/hold"
)

// TestBindingReleaser: a binding is held while its scheduling is
// suspended; release clears the suspension and nothing else; a binding
// without a suspension, or with one that is not a bool, is not held.
func TestBindingReleaser(t *testing.T) {
	t.Parallel()
	r := bindingReleaser()
	b := newBinding()
	b.Object["spec"] = map[string]any{"suspension": map[string]any{"scheduling": true, "dispatching": false},
		"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"m1"}}}}
	if !r.held(b) {
		t.Fatal("a binding with spec.suspension.scheduling true is not held")
	}
	before := b.DeepCopy()
	r.release(b)
	if r.held(b) {
		t.Fatal("held after release")
	}
	if v, ok, _ := unstructured.NestedBool(b.Object, hold.BindingSuspension...); !ok || v {
		t.Fatalf("spec.suspension.scheduling %v (set %v), want false", v, ok)
	}
	unstructured.RemoveNestedField(b.Object, hold.BindingSuspension...)
	unstructured.RemoveNestedField(before.Object, hold.BindingSuspension...)
	if !reflect.DeepEqual(before.Object, b.Object) {
		t.Fatalf("release changed more than the suspension: %v", b.Object)
	}
	for _, spec := range []map[string]any{{}, {"suspension": map[string]any{"scheduling": "true"}}} {
		o := newBinding()
		o.Object["spec"] = spec
		if r.held(o) {
			t.Errorf("spec %v: held", spec)
		}
	}
	if gvk := newBinding().GroupVersionKind(); gvk.Group != hold.BindingGroup || gvk.Kind != hold.BindingKind || gvk.Version != hold.BindingVersion {
		t.Fatalf("GVK %v", gvk)
	}
}
