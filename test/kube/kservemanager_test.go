//go:build interop

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

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
	dir := os.Getenv("CARBONGATE_KSERVE_DIR")
	if dir == "" {
		dir = services.Setup(t, "kserve.sh")
	}
	c := startCluster(t)
	installKServeCRDs(t, c, filepath.Join(dir, "crds"))
	startKServeManager(t, c, dir)

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

// installKServeCRDs installs every CRD of KServe's config/crd/full (and its
// subdirectories): the manager watches InferenceGraphs, TrainedModels and
// the local-model types too.
func installKServeCRDs(t *testing.T, c *cluster, dir string) {
	t.Helper()
	paths := []string{dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	if _, err := envtest.InstallCRDs(c.cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: 2 * time.Minute}); err != nil {
		t.Fatalf("install KServe's CRDs: %v", err)
	}
}

// startKServeManager applies KServe's inferenceservice-config ConfigMap
// with Standard as the default deployment mode into namespace kserve and
// runs the manager from dir as cluster admin. Its webhook server is
// started (with a serving certificate where controller-runtime looks, under
// TMPDIR) but not registered with the API server.
func startKServeManager(t *testing.T, c *cluster, dir string) {
	t.Helper()
	c.namespace(t, "kserve", nil)
	b, err := os.ReadFile(filepath.Join(dir, "inferenceservice-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cms := decodeYAML(t, b)
	if len(cms) != 1 {
		t.Fatalf("inferenceservice-config.yaml: %d objects, want 1", len(cms))
	}
	data := cms[0].Object["data"].(map[string]any)
	data["deploy"] = `{"defaultDeploymentMode": "Standard"}`
	cm, err := json.Marshal(cms[0].Object)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.apply(t, cm, "", false); err != nil {
		t.Fatalf("inferenceservice-config: %v", err)
	}

	tmp := t.TempDir()
	certs := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := services.NewCA(t, "kserve-webhook-ca").Issue(t, "kserve-webhook", false, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	for name, pem := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, name), pem, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := c.kubeconfig(t, "kserve-manager", "system:masters")
	var probe string
	services.StartBinary(t, services.Binary{
		Name: "kserve-manager", Path: filepath.Join(dir, "kserve-manager"),
		Env: []string{"KUBECONFIG=" + kubeconfig, "TMPDIR=" + tmp, "POD_NAMESPACE=kserve"},
		ArgsFor: func() []string {
			probe = fmt.Sprintf("127.0.0.1:%d", services.FreePort(t))
			return []string{"--leader-elect=false", "--health-probe-addr", probe,
				"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", services.FreePort(t)),
				"--webhook-port", fmt.Sprint(services.FreePort(t))}
		},
		Ready:   func(ctx context.Context) error { return services.HTTPReady("http://" + probe + "/readyz")(ctx) },
		Timeout: 2 * time.Minute,
	})
}
