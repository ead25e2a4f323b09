//go:build interop

package federation

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
)

// testChart installs the chart's release for Karmada's API server
// (karmada.side apiServer: the binding webhook, carbongate's ClusterRole,
// ClusterRoleBinding and ServiceAccount) with Helm into this Karmada's API
// server, and runs carbongate with a token of that ServiceAccount as its
// --karmada-kubeconfig: with only the rights the chart grants, an opted-in
// Deployment whose policy allows all three members lands in the decided one
// only. The webhook's URL and CA come from a helm upgrade once carbongate
// runs; helm uninstall removes the webhook.
func testChart(t *testing.T, f *Federation) {
	const ns, name, release = "charted", "charted", "carbongate"
	helm := newHelm(t, f.Karmada.Kubeconfig)
	values := func(url string, ca []byte) string {
		return fmt.Sprintf(`
admission: {mode: carbongate, tls: {secretName: unused-here}}
karmada:
  enabled: true
  side: apiServer
  hostNamespace: carbon
  webhook: {url: %q, caBundle: %q}
`, url, base64.StdEncoding.EncodeToString(ca))
	}
	// Installed first with a URL nothing serves: the ServiceAccount must
	// exist for carbongate's token.
	helm.run(t, "install", release, "-n", systemNamespace, "--skip-crds", "-f", helm.values(t, values("https://127.0.0.1:9/v1/admission/mutate", nil)))
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			helm.run(t, "uninstall", release, "-n", systemNamespace)
		}
	})
	// The later --karmada-kubeconfig wins over startBindingGate's (Karmada's admin).
	g := startBindingGate(t, f, "--karmada-kubeconfig", f.tokenKubeconfig(t, systemNamespace, "carbongate"))
	helm.run(t, "upgrade", release, "-n", systemNamespace, "--skip-crds", "-f", helm.values(t, values(g.url+admission.Path, g.caPEM)))

	deadline := "2021-06-01T12:00:00Z"
	want := g.decidedMember(t, f.Members, "PT2H", deadline)
	createNamespace(t, f, ns)
	createAnnotatedDeployment(t, f, ns, name, 1, map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}},
		map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H"})
	waitDeployment(t, want, ns, name, 1)
	time.Sleep(2 * time.Second)
	wantOnlyIn(t, f, want, ns, name)
	b, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).Get(context.Background(), name+"-deployment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := b.GetAnnotations(); a[admission.AnnotationCluster] != want.Name {
		t.Fatalf("binding annotations %v: want the decision for %s, made with the chart's rights", a, want.Name)
	}

	helm.run(t, "uninstall", release, "-n", systemNamespace)
	uninstalled = true
	hooks, err := f.Karmada.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil || len(hooks.Items) > 0 {
		t.Errorf("after helm uninstall: %d webhook configurations of the release (%v), want none", len(hooks.Items), err)
	}
	if _, err := f.Karmada.Kube.CoreV1().ServiceAccounts(systemNamespace).Get(context.Background(), "carbongate", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall: ServiceAccount carbongate: %v, want it gone", err)
	}
}

// tokenKubeconfig writes a kubeconfig of Karmada's API server that
// authenticates with a token of ServiceAccount ns/sa (an hour).
func (f *Federation) tokenKubeconfig(t *testing.T, ns, sa string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hour := int64(3600)
	tok, err := f.Karmada.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s/%s: %v", ns, sa, err)
	}
	return f.WriteFile(filepath.Join("tokens", sa+".kubeconfig"), fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: karmada
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: %s
  user: {token: %s}
contexts:
- name: karmada
  context: {cluster: karmada, user: %s}
current-context: karmada
`, f.Karmada.URL, base64.StdEncoding.EncodeToString(f.Karmada.PKI.CA.PEM), sa, tok.Status.Token, sa))
}

// helmRunner runs Helm against one API server, with homes of its own.
type helmRunner struct {
	path, kubeconfig, home string
}

func newHelm(t *testing.T, kubeconfig string) *helmRunner {
	return &helmRunner{path: services.Tool(t, "HELM", "helm.sh"), kubeconfig: kubeconfig, home: t.TempDir()}
}

// run runs helm with args on the chart (install and upgrade name it),
// failing t with its output.
func (h *helmRunner) run(t *testing.T, args ...string) {
	t.Helper()
	if args[0] == "install" || args[0] == "upgrade" {
		args = append(args[:2:2], append([]string{filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate")}, args[2:]...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.path, append(args, "--kubeconfig", h.kubeconfig)...)
	cmd.Env = services.HelmEnv(h.home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// values writes a values file and returns its path (no comma in it: Helm
// splits -f on commas).
func (h *helmRunner) values(t *testing.T, v string) string {
	t.Helper()
	p := filepath.Join(h.home, fmt.Sprintf("values-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
