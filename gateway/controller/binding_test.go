package controller

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

// TestMemberCannotTake: after a binding's release, a member that is not
// Ready or carries a taint the binding does not tolerate is named with
// why; a Ready member, or a taint tolerated, says nothing.
func TestMemberCannotTake(t *testing.T) {
	t.Parallel()
	cluster := func(name string, ready bool, taints ...any) *unstructured.Unstructured {
		c := newCluster()
		c.SetName(name)
		status := "False"
		if ready {
			status = "True"
		}
		c.Object["spec"] = map[string]any{"taints": taints}
		c.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status}}}
		return c
	}
	maintenance := map[string]any{"key": "example.com/maintenance", "effect": "NoSchedule"}
	r := fake.NewClientBuilder().WithObjects(cluster("ok", true), cluster("down", false), cluster("cordoned", true, maintenance)).Build()
	for _, tc := range []struct {
		names       []any
		tolerations []any
		want        string // in the message; "": none
	}{
		{names: []any{"ok"}},
		{names: []any{"down"}, want: "down: not Ready"},
		{names: []any{"cordoned"}, want: "cordoned: taint example.com/maintenance:NoSchedule"},
		{names: []any{"cordoned"}, tolerations: []any{map[string]any{"key": "example.com/maintenance", "operator": "Exists"}}},
		{names: []any{"down", "ok"}},
		{names: []any{"gone"}, want: "gone: "},
	} {
		b := newBinding()
		b.SetAnnotations(map[string]string{hold.AnnotationCluster: "x"})
		b.Object["spec"] = map[string]any{"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": tc.names},
			"clusterTolerations": tc.tolerations}}
		got, err := memberCannotTake(context.Background(), r, b)
		if err != nil {
			t.Fatal(err)
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("clusters %v tolerating %v: %q, want %q", tc.names, tc.tolerations, got, tc.want)
		}
	}
}
