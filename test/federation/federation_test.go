//go:build interop

package federation

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/test/cluster"
)

// TestFederation starts Karmada with three members in three regions (once:
// about 30 s) and runs the federation's tests on it.
func TestFederation(t *testing.T) {
	f := Start(t, ThreeRegions)
	n, mib := f.RSSMiB()
	t.Logf("figures: %d processes, RSS %.0f MiB after set-up", n, mib)
	t.Run("Propagation", func(t *testing.T) { testPropagation(t, f) })
	t.Run("BindingWebhook", func(t *testing.T) { testBindingWebhook(t, f) })
	t.Run("Placement", func(t *testing.T) { testPlacement(t, f) })
	t.Run("AffinityGroups", func(t *testing.T) { testAffinityGroups(t, f) })
	t.Run("Divided", func(t *testing.T) { testDivided(t, f) })
	t.Run("WebhookDown", func(t *testing.T) { testWebhookDown(t, f) })
	// Before the holding tests: the bindings they leave in the member it
	// taints are evicted too, at --resource-eviction-rate.
	t.Run("Failover", func(t *testing.T) { testFailover(t, f) })
	t.Run("Holding", func(t *testing.T) { testHolding(t, f) })
	t.Run("Ledger", func(t *testing.T) { testLedger(t, f) })
	t.Run("RedecideMember", func(t *testing.T) { testRedecideMember(t, f) })
	var wave waveFigures
	t.Run("HoldingWave", func(t *testing.T) { wave = testHoldingWave(t, f) })
	t.Run("DispatchWave", func(t *testing.T) { testDispatchWave(t, f, wave) })
	t.Run("ReleaseTainted", func(t *testing.T) { testReleaseTainted(t, f) })
	t.Run("Chart", func(t *testing.T) { testChart(t, f) })
}

// testPropagation checks that Karmada's own placement works: a Deployment
// under a PropagationPolicy over all three members reaches every member
// with its replicas, one under a policy that selects a region by the
// Cluster's spec.region reaches that member only, and deleting the
// Deployment on Karmada deletes it in the members (garbage collection on
// Karmada's API server).
func testPropagation(t *testing.T, f *Federation) {
	for _, m := range f.Members {
		c, err := f.Karmada.Dynamic.Resource(ClusterResource).Get(context.Background(), m.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		region, _, _ := unstructured.NestedString(c.Object, "spec", "region")
		provider, _, _ := unstructured.NestedString(c.Object, "spec", "provider")
		if region != m.Region || provider != m.Provider {
			t.Errorf("Cluster %s: provider %q region %q, want %q %q", m.Name, provider, region, m.Provider, m.Region)
		}
	}
	const ns = "propagation"
	createNamespace(t, f, ns)

	everywhere := map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}}
	createDeployment(t, f, ns, "everywhere", 2, everywhere)
	pl := f.Member("member-pl")
	byRegion := map[string]any{"clusterAffinity": map[string]any{"fieldSelector": map[string]any{"matchExpressions": []any{
		map[string]any{"key": "region", "operator": "In", "values": []any{pl.Region}},
	}}}}
	createDeployment(t, f, ns, "poland", 1, byRegion)

	start := time.Now()
	for _, m := range f.Members {
		waitDeployment(t, m, ns, "everywhere", 2)
	}
	t.Logf("figures: a Deployment reached %d members %v after its creation", len(f.Members), time.Since(start).Round(time.Millisecond))
	waitDeployment(t, pl, ns, "poland", 1)
	wantOnlyIn(t, f, pl, ns, "poland")

	if err := f.Karmada.Kube.AppsV1().Deployments(ns).Delete(context.Background(), "everywhere", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range f.Members {
		cluster.Eventually(t, time.Minute, m.Name+": Deployment everywhere deleted", func(ctx context.Context) error {
			_, err := m.Kube.AppsV1().Deployments(ns).Get(ctx, "everywhere", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		})
	}
}

func memberNames(f *Federation) []any {
	var names []any
	for _, m := range f.Members {
		names = append(names, m.Name)
	}
	return names
}

// createDeployment creates a Deployment of a pause container on Karmada and
// a PropagationPolicy of its own with placement.
func createDeployment(t *testing.T, f *Federation, ns, name string, replicas int32, placement map[string]any) {
	t.Helper()
	createAnnotatedDeployment(t, f, ns, name, replicas, placement, nil)
}

// createAnnotatedDeployment is createDeployment of a Deployment with
// annotations.
func createAnnotatedDeployment(t *testing.T, f *Federation, ns, name string, replicas int32, placement map[string]any, annotations map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := f.Karmada.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"resourceSelectors": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}},
			"placement":         placement,
		},
	}}
	if _, err := f.Karmada.Dynamic.Resource(PropagationPolicyResource).Namespace(ns).Create(ctx, pp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitDeployment waits until member m has Deployment ns/name with replicas.
func waitDeployment(t *testing.T, m *Cluster, ns, name string, replicas int32) {
	t.Helper()
	cluster.Eventually(t, 2*time.Minute, fmt.Sprintf("%s: Deployment %s/%s", m.Name, ns, name), func(ctx context.Context) error {
		d, err := m.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
			return fmt.Errorf("replicas %v, want %d", d.Spec.Replicas, replicas)
		}
		return nil
	})
}

func createNamespace(t *testing.T, f *Federation, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.Karmada.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantOnlyIn checks that Deployment ns/name exists in no member but in.
func wantOnlyIn(t *testing.T, f *Federation, in *Cluster, ns, name string) {
	t.Helper()
	for _, m := range f.Members {
		if m == in {
			continue
		}
		if _, err := m.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s (%s): Deployment %s/%s is there too, want it in %s only (get: %v)", m.Name, m.Region, ns, name, in.Name, err)
		}
	}
}
