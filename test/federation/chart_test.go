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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// testChart installs the chart's release for Karmada's API server
// (karmada.side apiServer: the binding webhook, carbongate's ClusterRole,
// ClusterRoleBinding and ServiceAccount) with Helm into this Karmada's API
// server, and runs carbongate, webhook and controller, with a token of that
// ServiceAccount as its --karmada-kubeconfig: with only the rights the chart
// grants there, a Job with a deadline whose policy allows all three members
// is held (in no member), then released at its decided start into the
// decided member only, its binding labelled released and its Events
// recorded. (The controller's own cluster, for its Lease, is Karmada's API
// server as Karmada's admin: the chart's rights there are not under test.)
// The webhook's URL and CA come from a helm upgrade once carbongate runs;
// helm uninstall removes the webhook and the ServiceAccount.
func testChart(t *testing.T, f *Federation) {
	const ns, leaseNS, name, release = "charted", "charted-lease", "charted", "carbongate"
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
	f.kubectl(f.Karmada, nil, "apply", "--server-side", "-f", filepath.Join(services.RepoRoot(t), "deploy", "crd", "vmtemplate.yaml"))
	createNamespace(t, f, ns)
	createNamespace(t, f, leaseNS)
	// The later --karmada-kubeconfig wins over startBindingGate's (Karmada's admin).
	g := startBindingGate(t, f, "--karmada-kubeconfig", f.tokenKubeconfig(t, systemNamespace, "carbongate"),
		"--controller", "--kubeconfig", f.Karmada.Kubeconfig, "--controller-namespace", leaseNS, "--decision-key-file", keyFile(t),
		"--replay-speed", fmt.Sprint(holdSpeed), "--replay-start", holdStart, "--redecide=false")
	helm.run(t, "upgrade", release, "-n", systemNamespace, "--skip-crds", "-f", helm.values(t, values(g.url+admission.Path, g.caPEM)))

	_, clk := decideHeld(t, g, f)
	createJob(t, f, ns, name, map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"})
	b := waitBinding(t, f, ns, name+"-job", labelled(hold.Held))
	dec, err := hold.Parse(b.GetAnnotations())
	if err != nil {
		t.Fatal(err)
	}
	want := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	if in := jobIn(t, f, ns, name); len(in) > 0 {
		t.Fatalf("Job %s/%s in %v while held", ns, name, in)
	}
	waitJob(t, want, ns, name)
	t.Logf("figures: released into %s %v after its decided start, with the chart's rights only", want.Name,
		time.Since(clk.wallOf(dec.ReleaseAt())).Round(time.Millisecond))
	waitBinding(t, f, ns, name+"-job", labelled(hold.Released))
	time.Sleep(2 * time.Second)
	if in := jobIn(t, f, ns, name); len(in) != 1 || in[0] != want.Name {
		t.Fatalf("Job %s/%s in %v, want in %s only", ns, name, in, want.Name)
	}
	cluster.Eventually(t, 30*time.Second, "Events Held and Released on the binding", func(ctx context.Context) error {
		evs, err := f.Karmada.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + "-job"})
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range evs.Items {
			seen[e.Reason] = true
		}
		if !seen["Held"] || !seen["Released"] {
			return fmt.Errorf("reasons %v", seen)
		}
		return nil
	})
	if strings.Contains(g.proc.Log(), "forbidden") {
		t.Errorf("carbongate was refused something on Karmada's API server with the chart's rights:\n%s", g.proc.Log())
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
// authenticates with the token of ServiceAccount ns/sa the chart's token
// Secret (<sa>-token) holds once Karmada's kube-controller-manager has
// filled it in: one that does not expire.
func (f *Federation) tokenKubeconfig(t *testing.T, ns, sa string) string {
	t.Helper()
	var token []byte
	cluster.Eventually(t, time.Minute, "Secret "+sa+"-token filled in", func(ctx context.Context) error {
		s, err := f.Karmada.Kube.CoreV1().Secrets(ns).Get(ctx, sa+"-token", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if token = s.Data[corev1.ServiceAccountTokenKey]; len(token) == 0 {
			return fmt.Errorf("no %s yet", corev1.ServiceAccountTokenKey)
		}
		return nil
	})
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
`, f.Karmada.URL, base64.StdEncoding.EncodeToString(f.Karmada.PKI.CA.PEM), sa, token, sa))
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
