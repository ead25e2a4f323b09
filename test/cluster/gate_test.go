//go:build interop

package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/deploy/webhook"
	"github.com/carbongate/carbongate/test/services"
)

const (
	replayStart = "2021-06-01T00:00:00Z"
	replaySpeed = 3600             // an hour of decisions per wall second
	leaseNS     = "carbongate-ctl" // the controller's Lease
	optInLabel  = "test.carbongate.io/cluster-loop"
)

// gate is carbongate running on the host as the cluster's workload
// webhook (over TLS, wanting the API server's client certificate) and
// controller (as its own identity, bound to deploy/controller/rbac.yaml).
type gate struct {
	*services.Proc
	url    string
	client *http.Client
}

func startGate(t *testing.T, c *Cluster, bin string) *gate {
	t.Helper()
	ctx := context.Background()
	root := services.RepoRoot(t)
	for _, f := range []string{"deploy/crd/vmtemplate.yaml"} {
		if out, err := c.Kubectl(ctx, "apply", "-f", filepath.Join(root, f)); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	if out, err := c.Kubectl(ctx, "create", "namespace", leaseNS); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "apply", "-n", leaseNS, "-f", filepath.Join(root, "deploy/controller/rbac.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, b := range [][]string{
		{"create", "clusterrolebinding", "carbongate-controller", "--clusterrole=carbongate-controller", "--user=carbongate-controller"},
		{"create", "rolebinding", "carbongate-controller-leader", "-n", leaseNS, "--role=carbongate-controller-leader", "--user=carbongate-controller"},
	} {
		if out, err := c.Kubectl(ctx, b...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	kubeconfig := c.UserKubeconfig(t, "carbongate-controller")
	dir := t.TempDir()
	ca := services.NewCA(t, "carbongate-serving-ca")
	certPEM, keyPEM := ca.Issue(t, "carbongate", false, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	files := map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "client-ca.crt": c.WebhookCA.PEM}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	g := &gate{client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}}
	g.Proc = services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"),
		ArgsFor: func() []string {
			port := services.FreePort(t)
			g.url = fmt.Sprintf("https://127.0.0.1:%d", port)
			return []string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--clock", "replay",
				"--replay-start", replayStart, "--replay-speed", fmt.Sprint(replaySpeed), "--drain-delay", "0s", "--access-log=false",
				"--admission", "--tls-cert", filepath.Join(dir, "tls.crt"), "--tls-key", filepath.Join(dir, "tls.key"),
				"--admission-client-ca", filepath.Join(dir, "client-ca.crt"),
				"--controller", "--kubeconfig", kubeconfig, "--controller-namespace", leaseNS, "--cluster-provider", "azure"}
		},
		Ready: func(ctx context.Context) error { return services.GetOK(ctx, g.client, g.url+"/readyz") },
	})
	g.register(t, c, ca.PEM)
	return g
}

// register sends the Jobs and Pods of namespaces labelled optInLabel to g,
// as the shipped configuration's workload webhook does (by URL: the API
// server reaches a host process directly).
func (g *gate) register(t *testing.T, c *Cluster, caPEM []byte) {
	t.Helper()
	mwc, err := webhook.Configuration(webhook.Config{CABundle: caPEM, URL: g.url + "/v1/admission/mutate"})
	if err != nil {
		t.Fatal(err)
	}
	var whs []admissionregistrationv1.MutatingWebhook
	for _, w := range mwc.Webhooks {
		if w.Name == webhook.WorkloadsName {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{optInLabel: "yes"}}
			whs = append(whs, w)
		}
	}
	if len(whs) != 1 {
		t.Fatalf("the shipped configuration has no webhook %s", webhook.WorkloadsName)
	}
	mwc.Name, mwc.Webhooks = "carbongate-workloads", whs
	if _, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
