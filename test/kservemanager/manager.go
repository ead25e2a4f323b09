// Package kservemanager runs KServe's own controller, cmd/manager of
// test/setup/kserve.sh, against a test API server: its CRDs installed, its
// inferenceservice-config ConfigMap in namespace kserve with Standard (raw
// Deployment) as the default mode, and the manager with its webhook server
// on the host. test/kube runs it beside an API server with no kubelet,
// test/cluster on the real nodes (with the pod webhook registered, so that
// KServe mounts the model storage into the predictor pods).
package kservemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/test/services"
)

// Namespace is where the manager's ConfigMap lives (its POD_NAMESPACE).
const Namespace = "kserve"

// Dir returns the directory of test/setup/kserve.sh: $CARBONGATE_KSERVE_DIR
// when make test set it, else the script's output (it builds once).
func Dir(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv("CARBONGATE_KSERVE_DIR"); dir != "" {
		return dir
	}
	return services.Setup(tb, "kserve.sh")
}

// Options configure Start.
type Options struct {
	// Kubeconfig is the manager's identity (it needs cluster admin's
	// rights: it watches every namespace and creates Deployments,
	// Services, HPAs).
	Kubeconfig string
	// Config sets fields of the inferenceservice-config ConfigMap's
	// entries (each entry a JSON object, e.g. "ingress"), over KServe's
	// defaults; "deploy" always gets "defaultDeploymentMode": "Standard".
	Config map[string]map[string]any
}

// Manager is a running KServe manager.
type Manager struct {
	*services.Proc
	// WebhookURL is its webhook server, https://127.0.0.1:PORT; paths as
	// KServe registers them (/mutate-pods, …).
	WebhookURL string
	// WebhookCA signed the webhook server's certificate (PEM).
	WebhookCA []byte
}

// Start installs KServe's CRDs from dir (test/setup/kserve.sh) with cfg,
// creates namespace kserve with the ConfigMap and runs dir's manager
// until cleanup. The webhook server runs with a certificate for
// 127.0.0.1 (where controller-runtime looks, under TMPDIR); registering
// its webhooks with the API server is the caller's choice.
func Start(tb testing.TB, cfg *rest.Config, dir string, opts Options) *Manager {
	tb.Helper()
	start := time.Now()
	installCRDs(tb, cfg, filepath.Join(dir, "crds"))
	crds := time.Since(start)
	applyConfig(tb, cfg, dir, opts.Config)

	tmp := tb.TempDir()
	certs := filepath.Join(tmp, "k8s-webhook-server", "serving-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		tb.Fatal(err)
	}
	ca := services.NewCA(tb, "kserve-webhook-ca")
	certPEM, keyPEM := ca.Issue(tb, "kserve-webhook", false, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	for name, pem := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certs, name), pem, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	m := &Manager{WebhookCA: ca.PEM}
	var probe string
	m.Proc = services.StartBinary(tb, services.Binary{
		Name: "kserve-manager", Path: filepath.Join(dir, "kserve-manager"),
		Env: []string{"TMPDIR=" + tmp, "POD_NAMESPACE=" + Namespace},
		ArgsFor: func() []string {
			probe = fmt.Sprintf("127.0.0.1:%d", services.FreePort(tb))
			webhook := services.FreePort(tb)
			m.WebhookURL = fmt.Sprintf("https://127.0.0.1:%d", webhook)
			// --kubeconfig on the command line: a cluster's teardown finds
			// the process by the path of its state directory.
			return []string{"--kubeconfig", opts.Kubeconfig, "--leader-elect=false", "--health-probe-addr", probe,
				"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", services.FreePort(tb)),
				"--webhook-port", fmt.Sprint(webhook)}
		},
		Ready:   func(ctx context.Context) error { return services.HTTPReady("http://" + probe + "/readyz")(ctx) },
		Timeout: 2 * time.Minute,
	})
	tb.Logf("figures: KServe's CRDs installed (Established) in %v, its manager Ready %v later",
		crds.Round(100*time.Millisecond), (time.Since(start) - crds).Round(100*time.Millisecond))
	return m
}

// installCRDs installs the CRDs of KServe's config/crd/full and its
// subdirectories (the manager watches InferenceGraphs, TrainedModels and
// the local-model types too) but llmisvc: LLMInferenceServices have a
// controller of their own (cmd/llmisvc), and their two CRDs, 4.4 of the
// 6.7 MB, took most of the time to install.
func installCRDs(tb testing.TB, cfg *rest.Config, dir string) {
	tb.Helper()
	paths := []string{dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "llmisvc" {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	// envtest logs through controller-runtime's logger: unset, it prints a
	// stack trace of the first message.
	ctrllog.SetLogger(logr.Discard())
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: 2 * time.Minute}); err != nil {
		tb.Fatalf("install KServe's CRDs: %v", err)
	}
}

// applyConfig creates namespace kserve and KServe's inferenceservice-config
// ConfigMap from dir with Standard as the default deployment mode and the
// fields of override set.
func applyConfig(tb testing.TB, cfg *rest.Config, dir string, override map[string]map[string]any) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "inferenceservice-config.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(b, &cm); err != nil {
		tb.Fatalf("inferenceservice-config.yaml: %v", err)
	}
	if cm.Data == nil {
		tb.Fatal("inferenceservice-config.yaml: no data")
	}
	entries := map[string]map[string]any{}
	maps.Copy(entries, override)
	entries["deploy"] = map[string]any{"defaultDeploymentMode": "Standard"}
	for entry, fields := range entries {
		doc := map[string]any{}
		if old, ok := cm.Data[entry]; ok {
			if err := json.Unmarshal([]byte(old), &doc); err != nil {
				tb.Fatalf("inferenceservice-config %s: %v", entry, err)
			}
		}
		maps.Copy(doc, fields)
		b, err := json.Marshal(doc)
		if err != nil {
			tb.Fatal(err)
		}
		cm.Data[entry] = string(b)
	}
	cm.Namespace = Namespace
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("namespace %s: %v", Namespace, err)
	}
	if _, err := kube.CoreV1().ConfigMaps(Namespace).Create(ctx, &cm, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("inferenceservice-config: %v", err)
	}
}
