package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/test/services"
)

const chartNS = "carbongate"

// InstallChart installs deploy/helm/carbongate as shipped but for what a
// cluster without a registry needs (the images loaded on the nodes:
// pullPolicy Never) and what the tests and make kube-up choose: carbongate
// as the webhook (TLS from a Secret, the API server's client certificate
// checked), the controller on, the replay clock replaySpeed times as fast
// as the wall. It waits until both replicas are Ready and checks their
// security context is the chart's.
func InstallChart(t testing.TB, c *Cluster, replaySpeed int) *ChartRelease {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if out, err := c.Kubectl(ctx, "create", "namespace", chartNS); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	serving := webhookTLS(t, c, chartNS, "carbongate-webhook-tls", "carbongate-webhook-client-ca", "carbongate")
	r := newChartRelease(t, c, chartNS, fmt.Sprintf(`image: {pullPolicy: Never}
gateway:
  replicas: 2
  extraArgs:
  - --replay-speed=%d
  # A leader killed without a goodbye is replaced within seconds (the
  # defaults, 15 s, would make the test wait).
  - --leader-lease-duration=6s
  - --leader-renew-deadline=4s
  - --leader-retry-period=1s
admission:
  mode: carbongate
  tls: {secretName: carbongate-webhook-tls, caBundle: %s}
  clientCA: {secretName: carbongate-webhook-client-ca}
controller: {enabled: true, clusterProvider: azure}
`, replaySpeed, base64.StdEncoding.EncodeToString(serving.CA.PEM)))
	r.run(t, ctx, "install", "carbongate", r.chart, "-f", r.values, "--wait", "--timeout", "5m")
	t.Logf("figures: helm install --wait, 2 carbongate pods Ready (%s) in %v", strings.Join(r.ready(t, ctx), ", "), time.Since(start).Round(100*time.Millisecond))
	serviceRouted(t, c, chartNS, "carbongate")
	return r
}

// serviceRouted waits until the host reaches Service name of ns through
// its ClusterIP: kube-proxy programs a Service's endpoints a moment after
// its pods are Ready, and until then the API server, which calls the
// webhook by that address, cannot reach it (the workload webhook's
// failurePolicy Ignore would admit a Job unheld).
func serviceRouted(t testing.TB, c *Cluster, ns, name string) {
	t.Helper()
	Eventually(t, time.Minute, "Service "+ns+"/"+name+" routed by kube-proxy", func(ctx context.Context) error {
		svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(svc.Spec.Ports) == 0 {
			return fmt.Errorf("no ports")
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var d net.Dialer
		conn, err := d.DialContext(dctx, "tcp", net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))))
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// webhookTLS makes a CA and, from it, Secret secret (kubernetes.io/tls) in
// namespace ns: a serving certificate for Service svc of ns; and Secret
// clientCA holding the CA of the API server's webhook client certificate
// (ca.crt), for the chart's admission.clientCA. It returns the PKI, whose
// CA is the webhook's caBundle.
func webhookTLS(t testing.TB, c *Cluster, ns, secret, clientCA, svc string) *services.PKI {
	t.Helper()
	serving := services.NewPKI(t, "carbongate-test-cluster-ca", filepath.Join(t.TempDir(), "pki"))
	name := svc + "." + ns + ".svc"
	cert, key := serving.Issue(t, "webhook", name, nil, nil, name, name+"."+dnsDomain)
	ca := serving.Write(t, "client-ca.crt", c.WebhookCA.PEM)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"create", "secret", "tls", secret, "-n", ns, "--cert", cert, "--key", key},
		{"create", "secret", "generic", clientCA, "-n", ns, "--from-file=ca.crt=" + ca},
	} {
		if out, err := c.Kubectl(ctx, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	return serving
}

// newChartRelease writes values for the chart's release carbongate in
// namespace ns.
func newChartRelease(t testing.TB, c *Cluster, ns, values string) *ChartRelease {
	t.Helper()
	dir := t.TempDir()
	r := &ChartRelease{c: c, ns: ns, helm: services.Tool(t, "HELM", "helm.sh"), values: filepath.Join(dir, "values.yaml"),
		chart: filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate"),
		env:   services.HelmEnv(filepath.Join(dir, "helm"))}
	if err := os.WriteFile(r.values, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// ChartRelease is the chart installed as release carbongate in a
// namespace (chartNS for InstallChart).
type ChartRelease struct {
	c                   *Cluster
	ns                  string
	helm, chart, values string
	env                 []string
}

// run runs helm with args in r's namespace and fails t, showing the
// namespace's pods and events, when it fails.
func (r *ChartRelease) run(t testing.TB, ctx context.Context, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, r.helm, append(args, "-n", r.ns, "--kubeconfig", r.c.Kubeconfig)...)
	cmd.Env = r.env
	if out, err := cmd.CombinedOutput(); err != nil {
		pods, _ := r.c.Kubectl(ctx, "get", "pods,events", "-n", r.ns, "-o", "wide")
		t.Fatalf("helm %s: %v\n%s\n%s", args[0], err, out, pods)
	}
}

// ready checks that two carbongate pods are Ready, each with the chart's
// security context, and returns them as name@node.
func (r *ChartRelease) ready(t testing.TB, ctx context.Context) []string {
	t.Helper()
	pods, err := r.c.Kube.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: gatewayPods})
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, p := range pods.Items {
		checkShippedSecurity(t, &p)
		if podReady(&p) && p.DeletionTimestamp == nil {
			ready = append(ready, p.Name+"@"+p.Spec.NodeName)
		}
	}
	if len(ready) < 2 {
		t.Fatalf("%d carbongate pods Ready (%s), want 2", len(ready), strings.Join(ready, ", "))
	}
	return ready
}

// gatewayPods selects the chart's carbongate pods.
const gatewayPods = "app.kubernetes.io/instance=carbongate,app.kubernetes.io/name=carbongate"

// checkShippedSecurity checks a pod of the chart (carbongate's, OPA's)
// runs as the chart says: non-root, read-only root file system, no
// privilege escalation.
func checkShippedSecurity(t testing.TB, p *corev1.Pod) {
	t.Helper()
	for _, ctr := range p.Spec.Containers {
		sc := ctr.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("pod %s container %s: security context %+v, want the chart's (non-root, read-only root FS, no escalation)", p.Name, ctr.Name, sc)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
