//go:build interop

package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testUpgrade upgrades the release with a changed value (the gateway's
// log level: a rolling update of its pods) while dry-run Jobs probe
// admission every 50 ms: every one is answered (the chart's drain delay
// and maxUnavailable 0), and two pods of the new template are Ready after.
func testUpgrade(t *testing.T, c *Cluster, r *ChartRelease, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	values := r.values + ".upgrade"
	if err := os.WriteFile(values, []byte("gateway: {logLevel: debug}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProbe(c, ns)
	r.run(t, ctx, "upgrade", "carbongate", r.chart, "-f", r.values, "-f", values, "--wait", "--timeout", "3m")
	summary := p.finish()
	ready := r.ready(t, ctx)
	d, err := c.Kube.AppsV1().Deployments(chartNS).Get(ctx, "carbongate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--log-level=debug") || d.Status.UpdatedReplicas != 2 {
		t.Errorf("after the upgrade: %d of 2 replicas updated, args %s; want --log-level=debug", d.Status.UpdatedReplicas, args)
	}
	t.Logf("figures: helm upgrade --wait (rolling update) %v, %s Ready; admission meanwhile: %s", time.Since(start).Round(100*time.Millisecond), strings.Join(ready, ", "), summary)
	if p.ignored > 0 || len(p.errs) > 0 || p.answered == 0 {
		t.Errorf("admission during the upgrade: %s, want every request answered; errors %v", summary, p.errs)
	}
}

// testUninstall uninstalls the release and checks that nothing of the
// chart is left: no object labelled as the release's, cluster-scoped
// (webhook configuration, ClusterRole and binding) or in its namespace
// (of every kind the API lists) — but the controller's Lease, which the
// controller creates, not the chart, and cannot delete: helm deletes its
// RBAC and ServiceAccount while its pods still drain (documented, with the
// kubectl line that deletes it).
func testUninstall(t *testing.T, c *Cluster, r *ChartRelease) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	r.run(t, ctx, "uninstall", "carbongate", "--wait", "--timeout", "2m")
	t.Logf("figures: helm uninstall --wait %v", time.Since(start).Round(100*time.Millisecond))
	left := func(args ...string) string {
		out, err := c.Kubectl(ctx, append([]string{"get", "-o", "name"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	const release = "app.kubernetes.io/instance=carbongate"
	if out := left("mutatingwebhookconfigurations,validatingwebhookconfigurations,clusterroles,clusterrolebindings", "-l", release); out != "" {
		t.Errorf("cluster-scoped objects of the release left:\n%s", out)
	}
	kinds, err := c.Kubectl(ctx, "api-resources", "--verbs=list", "--namespaced", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, k := range strings.Fields(kinds) {
		// Events expire by themselves; Endpoints are mirrored by the
		// EndpointSlices (and kubectl warns about them on stderr).
		if k != "events" && k != "events.events.k8s.io" && k != "endpoints" {
			all = append(all, k)
		}
	}
	Eventually(t, time.Minute, "nothing of the chart left in "+chartNS, func(context.Context) error {
		var extra []string
		for _, o := range strings.Fields(left(strings.Join(all, ","), "-n", chartNS)) {
			switch o { // the namespace's own and the test's TLS Secrets
			case "configmap/kube-root-ca.crt", "serviceaccount/default", "secret/carbongate-webhook-tls", "secret/carbongate-webhook-client-ca",
				"lease.coordination.k8s.io/carbongate-controller":
				continue
			}
			extra = append(extra, o)
		}
		if len(extra) > 0 {
			return fmt.Errorf("left: %v", extra)
		}
		return nil
	})
}
