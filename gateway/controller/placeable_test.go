package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/carbongate/carbongate/gateway/hold"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }
func (fixedClock) Mode() string     { return "system" }

// TestReleaseWarnsUnplaceable: a Job released while no node of its
// decided region can take its pods (NotReady, cordoned, tainted, none)
// gets an Unplaceable warning naming each node's reason, and the metric
// counts it; a region with a node that can take them gets neither.
func TestReleaseWarnsUnplaceable(t *testing.T) {
	t.Parallel()
	notReady := corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}
	gpu := corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	node := func(name, region string, unschedulable bool, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hold.RegionLabel: region}},
			Spec: corev1.NodeSpec{Unschedulable: unschedulable, Taints: taints}}
	}
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  []string // in the event's message; none: no event
	}{
		{"a Ready node", []*corev1.Node{node("a", "westeurope", false), node("b", "westeurope", false, notReady)}, nil},
		{"a tolerated taint", []*corev1.Node{node("a", "westeurope", false, corev1.Taint{Key: "batch", Effect: corev1.TaintEffectNoSchedule})}, nil},
		{"not ready", []*corev1.Node{node("a", "westeurope", false, notReady), node("c", "swedencentral", false)},
			[]string{"in westeurope", "a: taint node.kubernetes.io/not-ready:NoSchedule"}},
		{"cordoned and tainted", []*corev1.Node{node("a", "westeurope", true), node("b", "westeurope", false, gpu)},
			[]string{"a: cordoned", "b: taint gpu:NoSchedule"}},
		{"no node", []*corev1.Node{node("c", "swedencentral", false)}, []string{"the region has no node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			events, m := releaseOneJob(t, tc.nodes)
			got := testutil.ToFloat64(m.unplaceable.WithLabelValues("job"))
			var warning string
			for _, e := range events {
				if strings.HasPrefix(e, "Warning Unplaceable") {
					warning = e
				}
			}
			if tc.want == nil {
				if warning != "" || got != 0 {
					t.Fatalf("event %q, metric %v; want none", warning, got)
				}
				return
			}
			if got != 1 {
				t.Errorf("metric %v, want 1", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(warning, w) {
					t.Errorf("event %q, want it to say %q (events %q)", warning, w, events)
				}
			}
		})
	}
}

// releaseOneJob reconciles a held Job due now, decided for westeurope
// (tolerating the taint batch), among nodes; it returns the events
// recorded and the metrics.
func releaseOneJob(t *testing.T, nodes []*corev1.Node) ([]string, *metrics) {
	t.Helper()
	signer, err := hold.NewSigner([]byte("carbongate controller tests' decision key"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2021, 6, 1, 12, 0, 0, 0, time.UTC)
	a := hold.Decision{Region: "westeurope", Zone: "NL", Start: now.Add(-time.Minute), ReleaseBy: now.Add(time.Hour)}.Annotations()
	a[hold.AnnotationSignature] = signer.Sign(hold.Subject{Kind: "job", Namespace: "ns", Name: "j"}, a)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", Labels: map[string]string{hold.Label: hold.Held}, Annotations: a},
		Spec: batchv1.JobSpec{Suspend: new(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Key: "batch", Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"westeurope"}}}}}}}}}}}}
	b := newFake().WithObjects(j)
	for _, n := range nodes {
		b = b.WithObjects(n)
	}
	c := b.Build()
	rec := record.NewFakeRecorder(10)
	r := jobReleaser()
	r.client, r.nodes, r.clock, r.events, r.metrics, r.log, r.signer = c, c, fixedClock(now), rec, newMetrics(nil), slog.New(slog.DiscardHandler), signer
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "j"}}); err != nil {
		t.Fatal(err)
	}
	var got batchv1.Job
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "j"}, &got); err != nil || got.Labels[hold.Label] != hold.Released {
		t.Fatalf("the Job after reconcile: labels %v (%v), want released", got.Labels, err)
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	return events, r.metrics
}
