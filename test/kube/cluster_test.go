//go:build interop

package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/carbongate/carbongate/test/services"
)

// fieldManager names the test's server-side applies.
const fieldManager = "carbongate-test"

// cluster is a running control plane and clients of it as cluster admin.
type cluster struct {
	env     *envtest.Environment
	cfg     *rest.Config
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	webhook *services.CA // signs the client certificate the API server shows webhooks
	dir     string       // temp dir of the cluster's files
}

// assets returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS, or what test/setup/kube.sh prints (it builds them on
// first use).
func assets(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		for _, bin := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(d, bin)); err != nil {
				tb.Fatalf("KUBEBUILDER_ASSETS=%s: %v", d, err)
			}
		}
		return d
	}
	return services.Setup(tb, "kube.sh")
}

// kserveCRDs are the KServe v0.20.0 CRDs of the kserve Go module (the
// version test/helm's go.mod requires: carbongate's own module does not
// depend on kserve) that carbongate's manifests and discovery use.
func kserveCRDs(tb testing.TB) []string {
	tb.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kserve/kserve")
	cmd.Dir = filepath.Join(services.RepoRoot(tb), "test", "helm")
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("go list -m github.com/kserve/kserve: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "full")
	var paths []string
	for _, f := range []string{"inferenceservices", "servingruntimes", "clusterservingruntimes"} {
		paths = append(paths, filepath.Join(dir, "serving.kserve.io_"+f+".yaml"))
	}
	return paths
}

// startCluster starts kube-apiserver and etcd with envtest, installs the
// VmTemplate and KServe CRDs and stops everything at cleanup. The API
// server presents a client certificate signed by c.webhook to every
// webhook (WebhookAdmissionConfiguration, user "*").
func startCluster(t testing.TB) *cluster {
	t.Helper()
	start := time.Now()
	c := &cluster{dir: t.TempDir()}
	var admission string
	c.webhook, admission = services.WebhookClient(t, c.dir)

	c.env = &envtest.Environment{
		BinaryAssetsDirectory: assets(t),
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              append([]string{filepath.Join(services.RepoRoot(t), "deploy", "crd", "vmtemplate.yaml")}, kserveCRDs(t)...),
			ErrorIfPathMissing: true,
			MaxTime:            2 * time.Minute,
		},
		ControlPlaneStartTimeout: services.DefaultStartTimeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	api := c.env.ControlPlane.GetAPIServer()
	api.Configure().Set("admission-control-config-file", admission)
	var out bytes.Buffer
	api.Out, api.Err = &out, &out
	cfg, err := c.env.Start()
	if err != nil {
		t.Fatalf("envtest: the control plane did not start: %v\n%s", err, tail(out.String(), 4000))
	}
	t.Cleanup(func() {
		if err := c.env.Stop(); err != nil {
			t.Errorf("envtest: stop: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kube-apiserver log (tail):\n%s", tail(out.String(), 6000))
		}
	})
	cfg.QPS, cfg.Burst = 200, 400
	c.cfg = cfg
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	v, err := c.kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("control plane %s up with the VmTemplate and KServe CRDs in %v", v.GitVersion, time.Since(start).Round(time.Millisecond))
	return c
}

func (c *cluster) write(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeconfig writes a kubeconfig for user (a new client-certificate
// identity in groups) and returns its path.
func (c *cluster) kubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	u, err := c.env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	return c.write(t, "kubeconfig-"+user, b)
}

// namespace creates a namespace with labels.
func (c *cluster) namespace(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

// resource maps an object's kind to the client for its resource: in the
// object's namespace when namespaced, else cluster-wide (and the object's
// namespace cleared).
func (c *cluster) resource(t *testing.T, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset()
		if m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	obj.SetNamespace("")
	return c.dyn.Resource(m.Resource)
}

// vmtemplates is the VmTemplate resource in namespace ns.
func (c *cluster) vmtemplates(ns string) dynamic.ResourceInterface {
	return c.dyn.Resource(schema.GroupVersionResource{Group: "carbongate.io", Version: "v1alpha1", Resource: "vmtemplates"}).Namespace(ns)
}

// decodeYAML splits multi-document YAML into objects (empty documents
// skipped).
func decodeYAML(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decode YAML: %v\n%s", err, b)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// apply applies every object of manifest server-side (as kubectl apply
// --server-side does), in namespace ns when an object names none and is
// namespaced; dryRun makes it --dry-run=server. It returns the objects as
// the API server answered them, or the first error.
func (c *cluster) apply(t *testing.T, manifest []byte, ns string, dryRun bool) ([]*unstructured.Unstructured, error) {
	t.Helper()
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var got []*unstructured.Unstructured
	for _, obj := range decodeYAML(t, manifest) {
		if obj.GetNamespace() == "" && ns != "" {
			obj.SetNamespace(ns)
		}
		out, err := c.resource(t, obj).Apply(context.Background(), obj.GetName(), obj, opts)
		if err != nil {
			return got, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		got = append(got, out)
	}
	return got, nil
}

// eventually retries f every interval until it returns nil or timeout
// passes, then fails the test with f's last error.
func eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// isNotFound reports whether err is the API server's 404.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func tail(s string, n int) string {
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}
