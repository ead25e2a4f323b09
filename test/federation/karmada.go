package federation

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// Karmada's resources the helpers and tests use, read and written as
// unstructured objects (Karmada's Go API module is not on the module proxy,
// and the product does not depend on Karmada).
var (
	ClusterResource           = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}
	PropagationPolicyResource = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "propagationpolicies"}
	ResourceBindingResource   = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha2", Resource: "resourcebindings"}
	WorkResource              = schema.GroupVersionResource{Group: "work.karmada.io", Version: "v1alpha1", Resource: "works"}
)

const (
	systemNamespace  = "karmada-system"
	clusterNamespace = "karmada-cluster" // the members' secrets
)

// startKarmada starts Karmada's components against its API server: the
// CRDs, the aggregated API server (Cluster objects) and its APIService,
// Karmada's admission webhooks, its controller-manager and scheduler, and a
// kube-controller-manager for namespace and garbage collection.
func (f *Federation) startKarmada() {
	k := f.Karmada
	for _, ns := range []string{systemNamespace, clusterNamespace} {
		f.create(k, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	f.kubectl(k, nil, "apply", "--server-side", "-R", "-f", filepath.Join(f.bins.karmada, "crds"))
	f.startAggregatedAPIServer()
	f.startWebhook()
	// The API and work-queue rate limits of Karmada's components (40
	// requests/s and 10 items/s past a burst of 100 by default, several
	// requests per workload propagated) take tens of seconds to propagate
	// a wave of 200 workloads; operators raise them the same way.
	limits := []string{"--kube-api-qps=400", "--kube-api-burst=800", "--rate-limiter-qps=400", "--rate-limiter-bucket-size=1000"}
	// Cluster failover (off by default) evicts workloads from a member
	// tainted NoExecute (testFailover), 0.5 a second by default: the
	// bindings earlier tests left there go first.
	f.startComponent("karmada-controller-manager", append([]string{"--cluster-status-update-frequency=5s",
		"--concurrent-resourcebinding-syncs=10", "--concurrent-work-syncs=10",
		"--feature-gates=Failover=true", "--enable-no-execute-taint-eviction=true", "--resource-eviction-rate=50"}, limits...)...)
	f.startComponent("karmada-scheduler", limits...)
	f.startKubeControllerManager()
}

func (f *Federation) startAggregatedAPIServer() {
	tb, k := f.tb, f.Karmada
	var port int
	services.StartBinary(tb, services.Binary{
		Name: "karmada-aggregated-apiserver", Path: filepath.Join(f.bins.karmada, "karmada-aggregated-apiserver"),
		ArgsFor: func() []string {
			port = services.FreePort(tb)
			return []string{"--kubeconfig=" + k.Kubeconfig, "--authentication-kubeconfig=" + k.Kubeconfig,
				"--authorization-kubeconfig=" + k.Kubeconfig, "--etcd-servers=" + k.etcd,
				"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--cert-dir=" + f.path("karmada", "aggregated-apiserver"),
				"--tls-cert-file=" + k.PKI.Path("serving.crt"), "--tls-private-key-file=" + k.PKI.Path("serving.key")}
		},
		Ready: func(ctx context.Context) error {
			return services.TLSReady(fmt.Sprintf("https://127.0.0.1:%d/readyz", port), k.PKI.CA.Cert)(ctx)
		},
		Timeout: 3 * time.Minute,
	})
	ca := base64.StdEncoding.EncodeToString(k.PKI.CA.PEM)
	f.kubectl(k, []byte(fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: karmada-aggregated-apiserver, namespace: %s}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.cluster.karmada.io}
spec: {caBundle: %s, group: cluster.karmada.io, groupPriorityMinimum: 2000, version: v1alpha1, versionPriority: 10,
       service: {name: karmada-aggregated-apiserver, namespace: %s, port: %d}}
`, systemNamespace, ca, systemNamespace, port)), "apply", "-f", "-")
	f.eventually(time.Minute, "Cluster API served", func(ctx context.Context) error {
		_, err := k.Dynamic.Resource(ClusterResource).List(ctx, metav1.ListOptions{})
		return err
	})
}

// startWebhook runs karmada-webhook and registers Karmada's own webhook
// configuration at it: it labels PropagationPolicies with the permanent id
// the controller-manager needs, among other defaults and checks.
func (f *Federation) startWebhook() {
	tb, k := f.tb, f.Karmada
	certs := f.path("karmada", "webhook")
	for _, n := range []string{"crt", "key"} {
		b, err := os.ReadFile(k.PKI.Path("serving." + n))
		if err != nil {
			tb.Fatal(err)
		}
		f.WriteFile(filepath.Join("karmada", "webhook", "tls."+n), b)
	}
	var port int
	services.StartBinary(tb, services.Binary{
		Name: "karmada-webhook", Path: filepath.Join(f.bins.karmada, "karmada-webhook"),
		ArgsFor: func() []string {
			port = services.FreePort(tb)
			return []string{"--kubeconfig=" + k.Kubeconfig, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
				"--cert-dir=" + certs, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", services.FreePort(tb)),
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", services.FreePort(tb))}
		},
		// It registers no health check (its probe port answers 404): ready
		// once it serves TLS with the certificate given.
		Ready: func(ctx context.Context) error {
			return tlsServing(ctx, fmt.Sprintf("127.0.0.1:%d", port), k.PKI.CA.Cert)
		},
	})
	cfg, err := os.ReadFile(filepath.Join(f.bins.karmada, "webhook-configuration.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	cfg = bytes.ReplaceAll(cfg, []byte("https://karmada-webhook.karmada-system.svc:443"), fmt.Appendf(nil, "https://127.0.0.1:%d", port))
	cfg = bytes.ReplaceAll(cfg, []byte("{{caBundle}}"), []byte(base64.StdEncoding.EncodeToString(k.PKI.CA.PEM)))
	f.kubectl(k, cfg, "apply", "-f", "-")
}

// startComponent runs one of Karmada's controllers (name is its binary)
// against its API server, with args added.
func (f *Federation) startComponent(name string, args ...string) {
	tb, k := f.tb, f.Karmada
	var health int
	services.StartBinary(tb, services.Binary{
		Name: name, Path: filepath.Join(f.bins.karmada, name),
		ArgsFor: func() []string {
			health = services.FreePort(tb)
			return append([]string{"--kubeconfig=" + k.Kubeconfig, "--leader-elect=false",
				fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", services.FreePort(tb)),
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health)}, args...)
		},
		Ready: func(ctx context.Context) error {
			return services.HTTPReady(fmt.Sprintf("http://127.0.0.1:%d/healthz", health))(ctx)
		},
	})
}

// startKubeControllerManager runs namespace and garbage collection on
// Karmada's API server (without them deleting a workload leaves its
// binding, and the member's copy, behind) and, as Karmada's own install
// does, the serviceaccount-token controller, which fills in the token
// Secrets of ServiceAccounts (the chart's for carbongate).
func (f *Federation) startKubeControllerManager() {
	tb, k := f.tb, f.Karmada
	var port int
	services.StartBinary(tb, services.Binary{
		Name: "kube-controller-manager", Path: filepath.Join(f.bins.node, "bin", "kube-controller-manager"),
		ArgsFor: func() []string {
			port = services.FreePort(tb)
			return []string{"--kubeconfig=" + k.Kubeconfig, "--authentication-kubeconfig=" + k.Kubeconfig,
				"--authorization-kubeconfig=" + k.Kubeconfig, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
				"--cert-dir=" + f.path("karmada", "kube-controller-manager"), "--controllers=namespace,garbagecollector,serviceaccount-token",
				"--service-account-private-key-file=" + k.PKI.Path("sa.key"), "--root-ca-file=" + k.PKI.Path("ca.crt"),
				"--leader-elect=false", "--cluster-name=karmada", "--profiling=false"}
		},
		Ready: services.Settled("kube-controller-manager"),
	})
}

// register creates m's Secrets (its admin token and CA; the impersonator's
// token) and its Cluster in Push mode with its provider and region.
func (f *Federation) register(m *Cluster) {
	k := f.Karmada
	for name, data := range map[string]map[string][]byte{
		m.Name:                   {"token": []byte(m.Token), "caBundle": m.PKI.CA.PEM},
		m.Name + "-impersonator": {"token": []byte(m.Token)},
	} {
		f.create(k, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterNamespace}, Data: data})
	}
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": m.Name},
		"spec": map[string]any{
			"apiEndpoint": m.URL, "syncMode": "Push", "provider": m.Provider, "region": m.Region,
			"secretRef":             map[string]any{"namespace": clusterNamespace, "name": m.Name},
			"impersonatorSecretRef": map[string]any{"namespace": clusterNamespace, "name": m.Name + "-impersonator"},
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := k.Dynamic.Resource(ClusterResource).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		f.tb.Fatalf("federation: registering %s: %v", m.Name, err)
	}
}

// waitMembersReady waits until Karmada reports every member Ready.
func (f *Federation) waitMembersReady() {
	f.eventually(2*time.Minute, "members Ready", func(ctx context.Context) error {
		for _, m := range f.Members {
			c, err := f.Karmada.Dynamic.Resource(ClusterResource).Get(ctx, m.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !conditionTrue(c, "Ready") {
				return fmt.Errorf("cluster %s not Ready: %v", m.Name, c.Object["status"])
			}
		}
		return nil
	})
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// create creates obj (a Namespace or Secret) on s; it may exist already.
func (f *Federation) create(s *APIServer, obj any) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = s.Kube.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Secret:
		_, err = s.Kube.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		f.tb.Fatalf("federation: create %T", obj)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		f.tb.Fatalf("federation: create %T: %v", obj, err)
	}
}

// Apply applies manifest (YAML) to s server-side as its admin.
func (f *Federation) Apply(s *APIServer, manifest []byte) {
	f.kubectl(s, manifest, "apply", "--server-side", "-f", "-")
}

// kubectl runs kubectl as s's admin with stdin (when not nil) within a
// minute; a failure fails tb with its output.
func (f *Federation) kubectl(s *APIServer, stdin []byte, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(f.bins.kube, "kubectl"), append([]string{"--kubeconfig=" + s.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.tb.Fatalf("federation: kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// eventually is cluster.Eventually with what named as the federation's.
func (f *Federation) eventually(timeout time.Duration, what string, fn func(ctx context.Context) error) {
	f.tb.Helper()
	cluster.Eventually(f.tb, timeout, "federation: "+what, fn)
}

// tlsServing checks that addr completes a TLS handshake with a certificate
// for 127.0.0.1 signed by ca.
func tlsServing(ctx context.Context, addr string, ca *x509.Certificate) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// BindingWebhook is the configuration of a mutating webhook on Karmada's
// API server for ResourceBindings, CREATE and UPDATE (Karmada rewrites a
// binding's placement from its policy on every change of the workload, so a
// webhook that narrows it must see updates too), at url, trusting ca, with
// failurePolicy Fail.
func BindingWebhook(name, url string, ca []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(5)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: name + ".carbongate.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{ResourceBindingResource.Group},
					APIVersions: []string{ResourceBindingResource.Version}, Resources: []string{ResourceBindingResource.Resource}, Scope: &scope},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: &timeout,
		}},
	}
}

// RegisterBindingWebhook registers BindingWebhook(name, url, ca) on
// Karmada's API server; it is deleted at cleanup.
func (f *Federation) RegisterBindingWebhook(tb testing.TB, name, url string, ca []byte) {
	tb.Helper()
	cfg := BindingWebhook(name, url, ca)
	hooks := f.Karmada.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := hooks.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("federation: registering webhook %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := hooks.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			tb.Errorf("federation: deleting webhook %s: %v", name, err)
		}
	})
}

// PointBindingWebhook points the webhook name registered with
// RegisterBindingWebhook at url, trusting ca.
func (f *Federation) PointBindingWebhook(tb testing.TB, name, url string, ca []byte) {
	tb.Helper()
	hooks := f.Karmada.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := hooks.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		tb.Fatalf("federation: webhook %s: %v", name, err)
	}
	cfg.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	if _, err := hooks.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
		tb.Fatalf("federation: pointing webhook %s at %s: %v", name, url, err)
	}
}
