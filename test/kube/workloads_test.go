//go:build interop

package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
)

// optedIn creates a namespace whose workloads go to the test's webhook and
// are held, with annotations.
func (e *ctlEnv) optedIn(t *testing.T, name string, annotations map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations,
		Labels: map[string]string{labelMode: ctlMode, hold.NamespaceLabel: hold.NamespaceEnabled}}}
	if _, err := e.c.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The webhook reads namespaces from the controller's cache: wait, with
	// dry runs, until it treats this one as opted in (held or unscheduled),
	// or a loaded machine makes the first Job look like one of a namespace
	// it does not know.
	jobs := e.c.kube.BatchV1().Jobs(name)
	eventually(t, 10*time.Second, "namespace "+name+" seen by the webhook", func() error {
		out, err := jobs.Create(context.Background(), testJob("probe", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if out.Labels[hold.Label] == "" && out.Annotations[admission.AnnotationUnscheduled] == "" {
			return fmt.Errorf("labels %v annotations %v", out.Labels, out.Annotations)
		}
		return nil
	})
}

// checkUnheld checks a workload was admitted unheld, saying why.
func checkUnheld(t *testing.T, what string, o metav1.Object, why string) {
	t.Helper()
	if o.GetLabels()[hold.Label] != "" || !strings.Contains(o.GetAnnotations()[admission.AnnotationUnscheduled], why) {
		t.Errorf("%s: labels %v annotations %v, want unheld with %s saying %q", what, o.GetLabels(), o.GetAnnotations(), admission.AnnotationUnscheduled, why)
	}
}

// testCannotPlace: a Job longer than the forecast horizon runs unheld.
func (e *ctlEnv) testCannotPlace(t *testing.T) {
	ns := "hold-long"
	e.optedIn(t, ns, nil)
	j := testJob("week", nil)
	j.Spec.ActiveDeadlineSeconds = new(int64(432000)) // 120 h
	got, err := e.c.kube.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a Job carbongate cannot place was refused: %v", err)
	}
	if got.Spec.Suspend != nil && *got.Spec.Suspend {
		t.Errorf("suspended, want it to run")
	}
	checkUnheld(t, "job", got, "longer than the forecast horizon")
}

// testPlacement: pods are pinned only where their own constraints let them
// run (nodes node-0 westeurope, node-1 swedencentral, node-2 polandcentral,
// and a tainted node in spaincentral added here), else run unheld.
func (e *ctlEnv) testPlacement(t *testing.T) {
	ctx := context.Background()
	nodes := e.c.kube.CoreV1().Nodes()
	if _, err := nodes.Patch(ctx, "node-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"kubernetes.io/hostname":"node-0"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	tainted := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-es", Labels: map[string]string{hold.RegionLabel: "spaincentral"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := nodes.Create(ctx, tainted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nodes.Delete(context.Background(), "node-es", metav1.DeleteOptions{}) })
	ns := "hold-placement"
	e.optedIn(t, ns, nil)
	pods := e.c.kube.CoreV1().Pods(ns)
	affinity := func(op corev1.NodeSelectorOperator, regions ...string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hold.RegionLabel, Operator: op, Values: regions}}}}}}}
	}
	toleration := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	for _, tc := range []struct {
		name    string
		spec    corev1.PodSpec
		regions []string // allowed; nil: unheld
	}{
		{"not-sweden", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpNotIn, "swedencentral")}, []string{"westeurope", "polandcentral"}},
		{"on-node-0", corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": "node-0"}}, []string{"westeurope"}},
		{"spain-tolerating", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpIn, "spaincentral"), Tolerations: toleration}, []string{"spaincentral"}},
		{"spain-intolerant", corev1.PodSpec{Affinity: affinity(corev1.NodeSelectorOpIn, "spaincentral")}, nil},
	} {
		tc.spec.Containers = []corev1.Container{{Name: "work", Image: "busybox"}}
		var got *corev1.Pod
		eventually(t, 10*time.Second, tc.name+" admitted with the node in the webhook's cache", func() error {
			p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: tc.spec}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil && tc.regions != nil && p.Labels[hold.Label] != hold.Held {
				return fmt.Errorf("not held yet (annotations %v)", p.Annotations)
			}
			got = p
			return err
		})
		if tc.regions == nil {
			checkUnheld(t, tc.name, got, "admit no node")
			if len(got.Spec.SchedulingGates) != 0 || got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "spaincentral" || len(got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 1 {
				t.Errorf("%s: gates %v affinity %+v, want ungated and unpinned", tc.name, got.Spec.SchedulingGates, got.Spec.Affinity)
			}
			continue
		}
		d, err := hold.Parse(got.Annotations)
		if err != nil || !slices.Contains(tc.regions, d.Region) {
			t.Errorf("%s: decision %+v (%v), want a region of %v", tc.name, d, err, tc.regions)
			continue
		}
		if len(tc.regions) > 1 {
			terms := got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if last := terms[0].MatchExpressions[len(terms[0].MatchExpressions)-1]; last.Values[0] != d.Region {
				t.Errorf("%s: pinned by %+v, want region %s", tc.name, terms, d.Region)
			}
		}
		t.Logf("%s: held in %s", tc.name, d.Region)
	}
}

// testMaxDelay: a namespace's max-delay PT0S runs Jobs at once; an
// invalid one is the default, with a warning kubectl would print.
func (e *ctlEnv) testMaxDelay(t *testing.T) {
	ctx := context.Background()
	e.optedIn(t, "hold-now", map[string]string{hold.AnnotationMaxDelay: "PT0S"})
	e.optedIn(t, "hold-garbage", map[string]string{hold.AnnotationMaxDelay: "garbage"})
	cfg := rest.CopyConfig(e.c.cfg)
	w := &warnings{}
	cfg.WarningHandler = w
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now, err := kube.BatchV1().Jobs("hold-now").Create(ctx, testJob("now", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("max-delay PT0S: %v", err)
	}
	if now.Spec.Suspend != nil && *now.Spec.Suspend {
		t.Errorf("max-delay PT0S: suspended, want it to run at once")
	}
	checkUnheld(t, "max-delay PT0S", now, "runs at once")
	var j *batchv1.Job
	if j, err = kube.BatchV1().Jobs("hold-garbage").Create(ctx, testJob("later", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if j.Labels[hold.Label] != hold.Held || !strings.Contains(strings.Join(w.get(), "\n"), hold.AnnotationMaxDelay) {
		t.Errorf("max-delay garbage: labels %v, warnings %q, want held with a warning naming %s", j.Labels, w.get(), hold.AnnotationMaxDelay)
	}
}

// warnings collects the API server's warnings.
type warnings struct {
	mu  sync.Mutex
	all []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, text)
}

func (w *warnings) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.all...)
}
