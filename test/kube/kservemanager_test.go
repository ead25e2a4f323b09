//go:build interop

package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/test/kservemanager"
	"github.com/carbongate/carbongate/test/services"
)

// TestKServeManager runs KServe's own controller (test/setup/kserve.sh,
// CARBONGATE_KSERVE_DIR) in Standard (raw Deployment) mode against the API
// server, with no Knative, Istio or cert-manager: `carbonctl deploy render`
// applied, the manager creates each InferenceService's predictor
// Deployment, running carbonserve's image from the rendered
// ServingRuntime, and its Service. No kubelet runs, so no pod starts.
// Without CARBONGATE_KSERVE_DIR it runs test/setup/kserve.sh itself.
func TestKServeManager(t *testing.T) {
	dir := kservemanager.Dir(t)
	c := startCluster(t)
	kservemanager.Start(t, c.cfg, dir, kservemanager.Options{Kubeconfig: c.kubeconfig(t, "kserve-manager", "system:masters")})

	const ns = "carbon"
	c.namespace(t, ns, nil)
	bin := services.GoBuild(t, "carbonctl")
	manifest := carbonctl(t, bin, "deploy", "render", "--zones", "DE,SE", "--storage-uri", "s3://models/carbon", "--namespace", ns)
	objs, err := c.apply(t, manifest, "", false)
	if err != nil {
		t.Fatalf("carbonctl deploy render | kubectl apply --server-side: %v", err)
	}
	image, isvcs := "", []string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServingRuntime":
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "containers")
			if len(cs) > 0 {
				image, _ = cs[0].(map[string]any)["image"].(string)
			}
		case "InferenceService":
			isvcs = append(isvcs, o.GetName())
		}
	}
	if image == "" || len(isvcs) < 2 {
		t.Fatalf("rendered: runtime image %q, InferenceServices %v; want an image and at least 2", image, isvcs)
	}
	start := time.Now()
	for _, name := range isvcs {
		eventually(t, 2*time.Minute, name+"'s predictor Deployment and Service", func() error {
			return predictorCreated(c, ns, name+"-predictor", image)
		})
	}
	t.Logf("KServe's manager created %d predictor Deployments and Services in %v", len(isvcs), time.Since(start).Round(time.Millisecond))
}

// predictorCreated checks that Deployment name in ns runs image in its
// kserve-container and that its Service exists.
func predictorCreated(c *cluster, ns, name, image string) error {
	ctx := context.Background()
	d, err := c.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var images []string
	for _, ct := range d.Spec.Template.Spec.Containers {
		if ct.Name == "kserve-container" && ct.Image == image {
			_, err := c.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		}
		images = append(images, ct.Name+"="+ct.Image)
	}
	return fmt.Errorf("deployment %s runs %v, want kserve-container=%s", name, images, image)
}
