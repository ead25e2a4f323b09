//go:build interop

package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
)

const (
	opaNS        = "carbongate-opa" // the release in OPA mode
	opaAdmission = "opa-admission"  // where its VmTemplates are created
	opaService   = "carbongate-opa" // the chart's OPA Deployment and Service
	// opaPods selects the chart's OPA pods.
	opaPods = "app.kubernetes.io/instance=carbongate,app.kubernetes.io/component=admission-opa"
)

var vmTemplates = schema.GroupVersionResource{Group: "carbongate.io", Version: "v1alpha1", Resource: "vmtemplates"}

// testChartOPA installs the chart with admission.mode opa in a namespace
// of its own, as shipped but for one carbongate replica and carbongate's
// pull policy (OPA's image, test/setup/opa.sh's binary, is on the nodes
// under the chart's name): OPA's pods serve the chart's bundle as the
// VmTemplate webhook, Ready with the chart's probes and security context
// (their processes, on the host, too), their API open to the API server's
// client certificate alone, and a VmTemplate created through the API
// server is scheduled by carbongate's answer (API server -> OPA's Service
// -> an OPA pod -> http.send -> carbongate's Service, by its in-cluster
// name, -> the decision). Then carbongate gone: denied, 503
// (admission.failOpen false); OPA gone: refused by the API server
// (admission.failurePolicy Fail).
func testChartOPA(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	templates := dyn.Resource(vmTemplates).Namespace(opaAdmission)
	for _, ns := range []string{opaNS, opaAdmission} {
		if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Before the release: no VmTemplate webhook yet. The first
	// VmTemplate request sets up the CRD's storage: not counted.
	dryRunTemplates(t, templates, 1, false)
	direct := dryRunTemplates(t, templates, 100, false)
	start := time.Now()
	r, serving := installOPAChart(t, c)
	opaReady := checkOPAPods(t, c, ctx)
	t.Logf("figures: helm install --wait in OPA mode (1 carbongate pod, OPA pods %s Ready) in %v", strings.Join(opaReady, ", "), time.Since(start).Round(100*time.Millisecond))
	checkOPAProcesses(t, len(opaReady))
	checkOPAWebhook(t, c, ctx)
	checkOPAClientAuth(t, c, ctx, serving)

	created, err := templates.Create(ctx, vmTemplate("batch-1", "PT3H"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create VmTemplate through OPA: %v", err)
	}
	checkScheduled(t, created)
	through := dryRunTemplates(t, templates, 100, true)
	pt, pd := percentiles(through), percentiles(direct)
	t.Logf("figures: admission of a VmTemplate through OPA's Service (2 OPA pods, each review asking carbongate's Service: no two alike): p50 %v p99 %v; no webhook: p50 %v p99 %v; added p50 %v p99 %v (%d each, server-side dry runs, sequential)",
		pt[0], pt[1], pd[0], pd[1], pt[0]-pd[0], pt[1]-pd[1], len(through))

	t.Run("carbongate-down", func(t *testing.T) {
		scale(t, c, "carbongate", 0)
		waitDenied(t, templates, "503 (carbongate unavailable)", func(err error) bool {
			var status apierrors.APIStatus
			return errors.As(err, &status) && status.Status().Code == http.StatusServiceUnavailable && strings.Contains(err.Error(), "carbongate unavailable")
		})
	})
	t.Run("opa-down", func(t *testing.T) {
		scale(t, c, opaService, 0)
		waitDenied(t, templates, "the webhook call failed (failurePolicy Fail)", func(err error) bool {
			return strings.Contains(err.Error(), "failed calling webhook")
		})
	})
	start = time.Now()
	r.run(t, ctx, "uninstall", "carbongate", "--wait", "--timeout", "2m")
	t.Logf("figures: helm uninstall --wait (OPA mode) %v", time.Since(start).Round(100*time.Millisecond))
}

// installOPAChart installs the chart's release carbongate in opaNS with
// admission.mode opa, the API server's client certificate required
// (admission.clientCA), and waits until its pods are Ready. It returns the
// release and the CA of OPA's serving certificate.
func installOPAChart(t *testing.T, c *Cluster) (*ChartRelease, *services.CA) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	serving := webhookTLS(t, c, opaNS, "carbongate-opa-tls", "carbongate-opa-client-ca", opaService)
	r := newChartRelease(t, c, opaNS, fmt.Sprintf(`image: {pullPolicy: Never}
gateway:
  replicas: 1
  extraArgs: [--replay-speed=%d]
admission:
  mode: opa
  tls: {secretName: carbongate-opa-tls, caBundle: %s}
  clientCA: {secretName: carbongate-opa-client-ca}
`, replaySpeed, base64.StdEncoding.EncodeToString(serving.CA.PEM)))
	// A failed test leaves nothing of the release behind: the later chart
	// tests check that no release's cluster-scoped object is left.
	t.Cleanup(func() {
		if t.Failed() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r.run(t, ctx, "uninstall", "carbongate", "--ignore-not-found", "--wait", "--timeout", "90s")
		}
	})
	r.run(t, ctx, "install", "carbongate", r.chart, "-f", r.values, "--wait", "--timeout", "4m")
	return r, serving.CA
}

// checkOPAClientAuth checks that OPA's API, reached through its Service's
// ClusterIP from the host, answers a client with a certificate of the API
// server's webhook CA (admission.clientCA) and refuses one without.
func checkOPAClientAuth(t *testing.T, c *Cluster, ctx context.Context, serving *services.CA) {
	t.Helper()
	svc, err := c.Kube.CoreV1().Services(opaNS).Get(ctx, opaService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := c.WebhookCA.Issue(t, "carbongate-test-opa-client", true, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(serving.Cert)
	url := "https://" + net.JoinHostPort(svc.Spec.ClusterIP, "443") + "/health"
	get := func(certs []tls.Certificate) error {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: opaService + "." + opaNS + ".svc", Certificates: certs, MinVersion: tls.VersionTLS12}}}
		defer client.CloseIdleConnections()
		return services.GetOK(ctx, client, url)
	}
	// The pods are Ready; kube-proxy may not have programmed the Service
	// yet (connection refused until it has).
	Eventually(t, 30*time.Second, "OPA with a client certificate of the API server's CA", func(context.Context) error {
		return get([]tls.Certificate{cert})
	})
	if err := get(nil); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("OPA without a client certificate: %v, want the TLS handshake refused", err)
	} else {
		t.Logf("OPA's API without a client certificate: %v", err)
	}
}

// checkOPAPods checks that every OPA pod of the release is Ready and runs
// as the chart says (checkShippedSecurity, and as user 1000 beside it)
// and returns them as name@node.
func checkOPAPods(t *testing.T, c *Cluster, ctx context.Context) []string {
	t.Helper()
	pods, err := c.Kube.CoreV1().Pods(opaNS).List(ctx, metav1.ListOptions{LabelSelector: opaPods})
	if err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, p := range pods.Items {
		checkShippedSecurity(t, &p)
		if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			t.Errorf("pod %s: pod security context %+v, want a non-root runAsUser", p.Name, sc)
		}
		if !podReady(&p) {
			t.Errorf("pod %s on %s not Ready: %v", p.Name, p.Spec.NodeName, p.Status.Conditions)
			continue
		}
		ready = append(ready, p.Name+"@"+p.Spec.NodeName)
	}
	if len(ready) != 2 {
		t.Fatalf("%d OPA pods Ready (%s), want the chart's 2", len(ready), strings.Join(ready, ", "))
	}
	return ready
}

// checkOPAProcesses checks, on the host (the nodes' containers are its
// processes), that want OPA servers of the chart run, each as user 1000
// (the chart's runAsUser) on a read-only root file system: what the image
// and the kubelet made of the pods' security context.
func checkOPAProcesses(t *testing.T, want int) {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if err != nil || args[0] != "/opa" || !slices.Contains(args, "--config-file=/etc/opa/config/config.yaml") {
			continue
		}
		n++
		status, errS := os.ReadFile(filepath.Join("/proc", p.Name(), "status"))
		mounts, errM := os.ReadFile(filepath.Join("/proc", p.Name(), "mountinfo"))
		if errS != nil || errM != nil {
			t.Fatalf("OPA process %s: %v %v", p.Name(), errS, errM)
		}
		if uids := procField(string(status), "Uid:"); !slices.Equal(uids, []string{"1000", "1000", "1000", "1000"}) {
			t.Errorf("OPA process %s runs as users %v (real, effective, saved, file system), want 1000", p.Name(), uids)
		}
		for line := range strings.Lines(string(mounts)) {
			if f := strings.Fields(line); len(f) > 5 && f[4] == "/" && !slices.Contains(strings.Split(f[5], ","), "ro") {
				t.Errorf("OPA process %s: root file system mounted %s, want ro", p.Name(), f[5])
			}
		}
	}
	if n != want {
		t.Errorf("%d OPA processes of the chart on the host, want %d", n, want)
	}
}

// procField is the values of the line of /proc/<pid>/status that starts
// with name.
func procField(status, name string) []string {
	for line := range strings.Lines(status) {
		if rest, ok := strings.CutPrefix(line, name); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// checkOPAWebhook checks the release's webhook configuration sends
// VmTemplates to OPA's Service at its root path, failurePolicy Fail.
func checkOPAWebhook(t *testing.T, c *Cluster, ctx context.Context) {
	t.Helper()
	mwc, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, opaNS+"-carbongate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want the VmTemplate webhook alone", len(mwc.Webhooks))
	}
	w := mwc.Webhooks[0]
	svc := w.ClientConfig.Service
	if svc == nil || svc.Namespace != opaNS || svc.Name != opaService || svc.Path == nil || *svc.Path != "/" || svc.Port == nil || *svc.Port != 443 {
		t.Errorf("webhook %s calls %+v, want %s/%s:443 path /", w.Name, svc, opaNS, opaService)
	}
	if w.FailurePolicy == nil || *w.FailurePolicy != "Fail" {
		t.Errorf("webhook %s: failurePolicy %v, want the chart's default Fail", w.Name, w.FailurePolicy)
	}
}

// vmTemplate is a VmTemplate of duration in opaAdmission: 4 vCPUs and
// 16Gi within 40 ms of westeurope, in the EU (test/fixtures/admission's
// create-scheduled-eu).
func vmTemplate(name, duration string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "carbongate.io/v1alpha1", "kind": "VmTemplate",
		"metadata": map[string]any{"name": name, "namespace": opaAdmission},
		"spec": map[string]any{"minCPU": int64(4), "minRAM": "16Gi", "duration": duration,
			"maxLatencyMs": int64(40), "originRegion": "westeurope", "residency": "EU"},
	}}
}

// checkScheduled checks that o carries carbongate's decision as the
// policy patches it (deploy/opa/README.md, step 8): the provider, the
// region and time, the instance type, and the provenance annotation
// agreeing with them and naming carbongate's request.
func checkScheduled(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	m, _, _ := unstructured.NestedMap(o.Object, "spec")
	spec := map[string]string{}
	for k, v := range m {
		if s, ok := v.(string); ok {
			spec[k] = s
		}
	}
	var prov struct {
		Region    string `json:"region"`
		Start     string `json:"start"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(o.GetAnnotations()[hold.AnnotationProvenance]), &prov); err != nil {
		t.Fatalf("annotation %s: %v (annotations %v)", hold.AnnotationProvenance, err, o.GetAnnotations())
	}
	if _, err := time.Parse(time.RFC3339, spec["schedulingTime"]); err != nil || spec["schedulingRegion"] == "" ||
		spec["provider"] != "azure" || spec["instanceType"] != "D4a v4" {
		t.Fatalf("spec %v, want provider azure, schedulingRegion, schedulingTime (RFC 3339) and instanceType D4a v4", spec)
	}
	if prov.Region != spec["schedulingRegion"] || prov.Start != spec["schedulingTime"] || prov.RequestID == "" {
		t.Fatalf("provenance %+v, want the spec's region %s and time %s, and carbongate's request id", prov, spec["schedulingRegion"], spec["schedulingTime"])
	}
	t.Logf("scheduled by carbongate (request %s): %s at %s", prov.RequestID, prov.Region, prov.Start)
}

// dryRunTemplates creates n VmTemplates (server-side dry runs, one at a
// time), each of a different duration so that no answer from OPA's cache
// serves it, and returns how long each took. Each must come back
// scheduled when scheduled, untouched otherwise.
func dryRunTemplates(t *testing.T, templates dynamic.ResourceInterface, n int, scheduled bool) []time.Duration {
	t.Helper()
	var took []time.Duration
	for i := range n {
		o := vmTemplate("probe", fmt.Sprintf("PT%dM", 60+i))
		start := time.Now()
		out, err := templates.Create(context.Background(), o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		took = append(took, time.Since(start))
		if err != nil {
			t.Fatalf("dry run %d: %v", i, err)
		}
		if _, got, _ := unstructured.NestedString(out.Object, "spec", "schedulingRegion"); got != scheduled {
			t.Fatalf("dry run %d: scheduled %v, want %v", i, got, scheduled)
		}
	}
	return took
}

// scale sets Deployment name of opaNS to replicas.
func scale(t *testing.T, c *Cluster, name string, replicas int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Kube.AppsV1().Deployments(opaNS).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Replicas = replicas
	if _, err := c.Kube.AppsV1().Deployments(opaNS).UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitDenied creates a VmTemplate (a server-side dry run of a new
// duration each time, so that OPA's cache cannot answer) until the API
// server refuses it as denied says, and logs how long that took.
func waitDenied(t *testing.T, templates dynamic.ResourceInterface, what string, denied func(error) bool) {
	t.Helper()
	start := time.Now()
	i := 0
	Eventually(t, time.Minute, "a VmTemplate refused: "+what, func(ctx context.Context) error {
		i++
		_, err := templates.Create(ctx, vmTemplate("probe", fmt.Sprintf("PT%dM", 1000+i)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !denied(err) {
			return fmt.Errorf("admitted or refused otherwise: %v", err)
		}
		t.Logf("refused after %v: %v", time.Since(start).Round(100*time.Millisecond), err)
		return nil
	})
}
