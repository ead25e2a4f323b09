//go:build interop

package kube

import (
	"bytes"
	"context"
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/test/services"
)

// testHelmInstall installs the chart into the API server with several
// values combinations (helm install: every object is created server-side,
// so schemas, CRD kinds and validation all apply) and uninstalls it.
func testHelmInstall(t *testing.T, c *cluster) {
	helm := services.Tool(t, "HELM", "helm.sh")
	kubeconfig := c.kubeconfig(t, "helm-admin", "system:masters")
	chart := filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate")
	ca := base64.StdEncoding.EncodeToString(services.NewCA(t, "carbongate-webhook-ca").PEM)
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", kubeconfig)...)
		cmd.Env = services.HelmEnv(t.TempDir())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	c.namespace(t, "models", nil)
	for _, tc := range []struct {
		name, release, ns, values string
		webhooks                  int
	}{
		{name: "defaults", release: "carbongate", ns: "helm-defaults", values: "{}"},
		{name: "everything on, carbongate webhook", release: "cg", ns: "helm-all", webhooks: 1, values: `
registry:
  enabled: true
  uriSecret: {name: carbongate-registry}
  tokenSecret: {name: carbongate-registry-token}
  artifactsDestination: s3://carbongate-models/mlartifacts
s3:
  enabled: true
  endpoint: http://seaweedfs-s3.storage.svc:8333
  region: us-east-1
  credentialsSecret: {name: carbongate-s3}
kserve:
  namespace: models
  discovery: {enabled: true}
  models: {enabled: true}
admission:
  mode: carbongate
  failOpen: true
  tls: {secretName: carbongate-webhook-tls, caBundle: ` + ca + `}
  clientCA: {secretName: carbongate-webhook-client-ca}
  namespaceSelector: {matchLabels: {carbongate.io/admission: enabled}}
autoscaling: {enabled: true}
store: {enabled: true, uriSecret: {name: carbongate-store}, migrate: true}
backfill: {enabled: true, zones: [DE]}
controller:
  enabled: true
  clusterProvider: azure
  vmKinds: [{provider: azure, apiGroup: compute.azure.com, kind: VirtualMachine, resource: virtualmachines}]
`},
		{name: "Karmada, host side", release: "fed", ns: "helm-karmada", webhooks: 1, values: `
admission:
  mode: carbongate
  tls: {secretName: carbongate-webhook-tls, caBundle: ` + ca + `}
karmada: {enabled: true, kubeconfigSecret: {name: karmada-kubeconfig}}
`},
		{name: "opa webhook", release: "policy", ns: "helm-opa", webhooks: 1, values: `
admission:
  mode: opa
  tls: {secretName: opa-tls, caBundle: ` + ca + `}
  namespaceSelector: {matchLabels: {carbongate.io/admission: enabled}}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := c.write(t, "values-"+tc.release+".yaml", []byte(tc.values))
			start := time.Now()
			run(t, "install", tc.release, chart, "--namespace", tc.ns, "--create-namespace", "--values", values)
			t.Logf("helm install %s in %v", tc.name, time.Since(start).Round(time.Millisecond))
			status := run(t, "status", tc.release, "--namespace", tc.ns)
			if !strings.Contains(status, "STATUS: deployed") {
				t.Errorf("helm status:\n%s", status)
			}
			mwcs, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(context.Background(),
				metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + tc.release})
			if err != nil {
				t.Fatal(err)
			}
			if len(mwcs.Items) != tc.webhooks {
				t.Errorf("%d webhook configurations of the release stored, want %d", len(mwcs.Items), tc.webhooks)
			}
			deps, err := c.kube.AppsV1().Deployments(tc.ns).List(context.Background(), metav1.ListOptions{})
			if err != nil || len(deps.Items) == 0 {
				t.Errorf("deployments of the release: %d, %v", len(deps.Items), err)
			}
			run(t, "uninstall", tc.release, "--namespace", tc.ns)
		})
	}
}
