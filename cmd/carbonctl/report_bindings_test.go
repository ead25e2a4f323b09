package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/ledger"
)

// reportBinding is a released ResourceBinding of kind (batch/v1 Job or
// apps/v1 Deployment) placed in member-de (zone DE), whose run there
// Karmada reflected as run (nil: none).
func reportBinding(name, apiVersion, kind string, created time.Time, run map[string]any) *unstructured.Unstructured {
	m := held("fed", name, "DE", created, map[string]string{hold.AnnotationCluster: "member-de"})
	b := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
		"metadata": map[string]any{"namespace": m.Namespace, "name": m.Name, "creationTimestamp": created.Format(time.RFC3339)},
		"spec":     map[string]any{"resource": map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": "fed", "name": name}},
	}}
	b.SetLabels(m.Labels)
	b.SetAnnotations(m.Annotations)
	if run != nil {
		b.Object["status"] = map[string]any{"aggregatedStatus": []any{map[string]any{"clusterName": "member-de", "status": run}}}
	}
	return b
}

// TestReportBindings: on Karmada's API server the report accounts the
// held ResourceBindings of Jobs at the run Karmada reflects from their
// member, and says which it skipped (a Deployment's: it does not end);
// on an API server that serves no ResourceBindings it reads none.
func TestReportBindings(t *testing.T) {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	run := map[string]any{"startTime": t0.Add(10 * time.Hour).Format(time.RFC3339), "completionTime": t0.Add(12 * time.Hour).Format(time.RFC3339)}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{bindingResource: "ResourceBindingList"},
		reportBinding("render-job", "batch/v1", "Job", t0, run),
		reportBinding("web-deployment", "apps/v1", "Deployment", t0, nil))
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return fake.NewSimpleClientset(), nil },
		dynamic: func(string) (dynamic.Interface, error) { return dyn, nil }}
	doc, stderr := reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled")
	if !strings.Contains(stderr, "skipped ResourceBinding fed/web-deployment") {
		t.Errorf("stderr %q does not say the Deployment's binding was skipped", stderr)
	}
	if len(doc.Workloads) != 1 {
		t.Fatalf("workloads %v, want the Job's binding only", doc.Workloads)
	}
	w := doc.Workloads[0]
	if w["kind"] != hold.BindingKind || w["name"] != "render-job" || w["status"] != string(ledger.Realized) || w["started"] != run["startTime"] {
		t.Fatalf("entry %v: want the binding realized over its member's run", w)
	}

	// Not allowed to list them (a user with the rights to Jobs and Pods
	// only): said, and the rest reported.
	denied := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{bindingResource: "ResourceBindingList"})
	denied.PrependReactor("list", "resourcebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(bindingResource.GroupResource(), "", errors.New("no rights"))
	})
	env.dynamic = func(string) (dynamic.Interface, error) { return denied, nil }
	if _, stderr := reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled"); !strings.Contains(stderr, "not allowed to list them") {
		t.Errorf("stderr %q does not say the bindings could not be listed", stderr)
	}

	// Not Karmada's API server: no ResourceBindings, no error.
	// An API server answers 404 for a resource it does not serve.
	plain := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{bindingResource: "ResourceBindingList"})
	plain.PrependReactor("list", "resourcebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(bindingResource.GroupResource(), "")
	})
	env.dynamic = func(string) (dynamic.Interface, error) { return plain, nil }
	reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled")
}

// TestReportReplay: workloads decided under a replay clock carry the
// API's wall times; given that replay's start, anchor and speed the
// report reads them in its time, as the controller does, and charges the
// replay's observations.
func TestReportReplay(t *testing.T) {
	wall := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC) // the replay's anchor
	replay := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	// Admitted at the anchor, ran from 10 s to 30 s after it: at 360
	// times the wall's speed, 01:00–03:00 of the replay.
	run := map[string]any{"startTime": wall.Add(10 * time.Second).Format(time.RFC3339), "completionTime": wall.Add(30 * time.Second).Format(time.RFC3339)}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{bindingResource: "ResourceBindingList"}, reportBinding("render-job", "batch/v1", "Job", wall, run))
	env := reportEnv{kube: func(string) (kubernetes.Interface, error) { return fake.NewSimpleClientset(), nil },
		dynamic: func(string) (dynamic.Interface, error) { return dyn, nil }}
	doc, _ := reportedJSON(t, env, "--kubeconfig", "x", "--data", "bundled",
		"--replay-start", replay.Format(time.RFC3339), "--replay-anchor", wall.Format(time.RFC3339Nano), "--replay-speed", "360")
	if len(doc.Workloads) != 1 {
		t.Fatalf("workloads %v", doc.Workloads)
	}
	w := doc.Workloads[0]
	if w["status"] != string(ledger.Realized) || w["started"] != replay.Add(time.Hour).Format(time.RFC3339) || w["ended"] != replay.Add(3*time.Hour).Format(time.RFC3339) {
		t.Fatalf("entry %v: want realized over 01:00–03:00 of the replay", w)
	}
}
