package controller

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
)

// TestBindingReleaser: a binding is held while its scheduling or its
// dispatching is suspended; staging releases the scheduling and holds the
// dispatching, once; release clears both and nothing else; a binding
// without a suspension, or with one that is not a bool, is not held.
func TestBindingReleaser(t *testing.T) {
	t.Parallel()
	r := bindingReleaser(time.Minute)
	b := newBinding()
	b.Object["spec"] = map[string]any{"suspension": map[string]any{"scheduling": true},
		"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{"m1"}}}}
	if !r.held(b) {
		t.Fatal("a binding with spec.suspension.scheduling true is not held")
	}
	before := b.DeepCopy()
	if !r.stage(b) {
		t.Fatal("a binding held from scheduling was not staged")
	}
	if s, d := suspended(b, hold.BindingSuspension), suspended(b, hold.BindingDispatching); s || !d || !r.held(b) {
		t.Fatalf("staged: scheduling %v, dispatching %v, held %v; want false, true, true", s, d, r.held(b))
	}
	if r.stage(b) {
		t.Fatal("staged twice")
	}
	r.release(b)
	if r.held(b) {
		t.Fatal("held after release")
	}
	for _, path := range [][]string{hold.BindingSuspension, hold.BindingDispatching} {
		if v, ok, _ := unstructured.NestedBool(b.Object, path...); !ok || v {
			t.Fatalf("%v %v (set %v), want false", path, v, ok)
		}
	}
	unstructured.RemoveNestedField(b.Object, "spec", "suspension")
	unstructured.RemoveNestedField(before.Object, "spec", "suspension")
	if !reflect.DeepEqual(before.Object, b.Object) {
		t.Fatalf("staging and release changed more than the suspension: %v", b.Object)
	}
	for _, spec := range []map[string]any{{}, {"suspension": map[string]any{"scheduling": "true"}}, {"suspension": map[string]any{"dispatching": "true"}}} {
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

// TestStageAhead: a held binding is staged once its release is at most the
// lead away (in the clock's time: the lead is wall time, so a replay at
// speed 10 stages 10 leads ahead), and woken for that until then; without
// a lead nothing is staged.
func TestStageAhead(t *testing.T) {
	t.Parallel()
	at := time.Date(2021, 6, 2, 22, 0, 0, 0, time.UTC)
	wall := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	replay, err := clock.NewReplay(at.Add(-time.Hour), func() time.Time { return wall })
	if err != nil {
		t.Fatal(err)
	}
	fast, err := replay.WithSpeed(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		lead      time.Duration
		now, next time.Time
		wantNext  time.Time
		staged    bool
	}{
		{name: "before the lead", lead: time.Minute, now: at.Add(-20 * time.Minute), next: at, wantNext: at.Add(-10 * time.Minute)},
		{name: "a re-decision sooner", lead: time.Minute, now: at.Add(-20 * time.Minute), next: at.Add(-15 * time.Minute), wantNext: at.Add(-15 * time.Minute)},
		{name: "in the lead", lead: time.Minute, now: at.Add(-10 * time.Minute), next: at, wantNext: at, staged: true},
		{name: "no lead", now: at.Add(-time.Second), next: at, wantNext: at},
	} {
		b := newBinding()
		b.SetNamespace("ns")
		b.SetName("b")
		b.Object["spec"] = map[string]any{"suspension": map[string]any{"scheduling": true}}
		c := newFake().WithObjects(b).Build()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			t.Fatal(err)
		}
		r := bindingReleaser(tc.lead)
		r.deps = deps{client: c, clock: fast, metrics: newMetrics(nil), log: slog.New(slog.DiscardHandler)}
		next, err := r.stageAhead(context.Background(), b, hold.Decision{Start: at, ReleaseBy: at.Add(time.Hour)}, tc.now, tc.next)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !next.Equal(tc.wantNext) {
			t.Errorf("%s: next %v, want %v", tc.name, next, tc.wantNext)
		}
		got := newBinding()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), got); err != nil {
			t.Fatal(err)
		}
		if suspended(got, hold.BindingDispatching) != tc.staged || suspended(got, hold.BindingSuspension) == tc.staged {
			t.Errorf("%s: stored suspension %v, staged want %v", tc.name, got.Object["spec"], tc.staged)
		}
	}
}

// TestMemberCannotTake: after a binding's release, a member that is not
// Ready or carries a taint the binding does not tolerate is named with
// why; a Ready member, or a taint tolerated, says nothing; a binding
// scheduled there already (staged) is kept off by NoExecute and not Ready
// only.
func TestMemberCannotTake(t *testing.T) {
	t.Parallel()
	maintenance := map[string]any{"key": "example.com/maintenance", "effect": "NoSchedule"}
	r := newFake().WithObjects(memberCluster("ok", true), memberCluster("down", false), memberCluster("cordoned", true, maintenance)).Build()
	for _, tc := range []struct {
		names       []any
		tolerations []any
		scheduled   bool   // Karmada scheduled it to names[0] (staged)
		want        string // in the message; "": none
	}{
		{names: []any{"ok"}},
		{names: []any{"down"}, want: "down: not Ready): Karmada leaves the binding unscheduled"},
		{names: []any{"cordoned"}, want: "cordoned: taint example.com/maintenance:NoSchedule"},
		{names: []any{"cordoned"}, tolerations: []any{map[string]any{"key": "example.com/maintenance", "operator": "Exists"}}},
		{names: []any{"down", "ok"}},
		{names: []any{"gone"}, want: "gone: "},
		// Scheduled there ahead of the release: a NoSchedule taint does not
		// move it; not Ready does keep it off, until Karmada can dispatch.
		{names: []any{"cordoned"}, scheduled: true},
		{names: []any{"down"}, scheduled: true, want: "down: not Ready): scheduled there ahead of its release"},
	} {
		b := newBinding()
		b.SetAnnotations(map[string]string{hold.AnnotationCluster: "x"})
		b.Object["spec"] = map[string]any{"placement": map[string]any{"clusterAffinity": map[string]any{"clusterNames": tc.names},
			"clusterTolerations": tc.tolerations}}
		if tc.scheduled {
			b.Object["spec"].(map[string]any)["clusters"] = []any{map[string]any{"name": tc.names[0], "replicas": int64(1)}}
		}
		why, err := memberCannotTake(context.Background(), r, b)
		got := why.released
		if err != nil {
			t.Fatal(err)
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("clusters %v tolerating %v: %q, want %q", tc.names, tc.tolerations, got, tc.want)
		}
	}
}
