//go:build interop

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/gateway/remote"
	"github.com/carbongate/carbongate/gateway/remote/remotetest"
)

// carbonctl runs bin's carbonctl and returns its stdout; a non-zero exit
// fails the test.
func carbonctl(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "carbonctl"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("carbonctl %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// testKServe applies `carbonctl deploy render` output server-side, then
// runs carbongate with KServe discovery as a user allowed only to read
// InferenceServices in that namespace, and plays KServe's controller by
// writing the InferenceService's status: the zone is routed to its
// predictor once Ready (and forecast by it) and no longer after deletion.
func testKServe(t *testing.T, c *cluster, bin string) {
	ctx := context.Background()
	const ns = "carbon"
	c.namespace(t, ns, nil)

	manifest := carbonctl(t, bin, "deploy", "render", "--zones", "DE,SE", "--storage-uri", "s3://models/carbon", "--namespace", ns)
	if _, err := c.apply(t, manifest, "", true); err != nil {
		t.Fatalf("carbonctl deploy render | kubectl apply --server-side --dry-run=server: %v", err)
	}
	cluster := carbonctl(t, bin, "deploy", "render", "--zones", "DE", "--storage-uri", "pvc://models/carbon", "--cluster-runtime",
		"--deployment-mode", "Knative", "--min-replicas", "0", "--namespace", ns)
	if _, err := c.apply(t, cluster, "", true); err != nil {
		t.Fatalf("deploy render --cluster-runtime --deployment-mode Knative, --dry-run=server: %v", err)
	}
	objs, err := c.apply(t, manifest, "", false)
	if err != nil {
		t.Fatalf("carbonctl deploy render | kubectl apply --server-side: %v", err)
	}
	var isvc *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "InferenceService" && o.GetLabels()[kserve.LabelZone] == "DE" {
			isvc = o
		}
	}
	if isvc == nil {
		t.Fatalf("no InferenceService of DE among %d applied objects", len(objs))
	}
	name := isvc.GetName()
	t.Logf("applied %d objects of carbonctl deploy render; DE is InferenceService %s", len(objs), name)

	if _, err := c.apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: carbongate-discovery}
rules:
- apiGroups: [serving.kserve.io]
  resources: [inferenceservices]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carbongate-discovery}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: carbongate-discovery}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carbongate-discovery}
`), ns, false); err != nil {
		t.Fatal(err)
	}
	kubeconfig := c.kubeconfig(t, "carbongate-discovery")

	backend := remotetest.NewBackend(name, 24, 96, 100)
	model := remotetest.ServeREST(t, backend, "DE")
	// The endpoint discovery must produce: the InferenceService's name as the
	// model, its predictor's URL.
	ep := model.Endpoint
	ep.Model = name
	label := remote.Label(ep)
	discovery := []string{"--kserve-namespace", ns, "--kubeconfig", kubeconfig, "--route-refresh", "500ms"}
	before := startGate(t, bin, nil, discovery...)

	// Applied but not Ready (no controller has written a status): not routed.
	time.Sleep(time.Second)
	if src, m := before.sourceOf(t, "DE"); src == "zone" {
		t.Fatalf("DE forecast by %s (%s) before its InferenceService is Ready", m, src)
	}
	if routes := before.routeLog(t); len(routes) != 0 {
		t.Fatalf("routes %v before the InferenceService is Ready", routes)
	}

	isvcs := c.resource(t, isvc)
	now := time.Now().UTC().Format(time.RFC3339)
	cur, err := isvcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Object["status"] = map[string]any{
		"url": model.Endpoint.URL,
		"conditions": []any{
			map[string]any{"type": "PredictorReady", "status": "True", "lastTransitionTime": now},
			map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": now},
		},
		"components": map[string]any{"predictor": map[string]any{"url": model.Endpoint.URL}},
	}
	if _, err := isvcs.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write the InferenceService's status: %v", err)
	}
	start := time.Now()
	eventually(t, 30*time.Second, "DE routed to its Ready InferenceService", func() error {
		if routes := before.routeLog(t); len(routes) != 1 || routes[0] != "+"+label {
			return fmt.Errorf("routes %v, want [+%s]", routes, label)
		}
		return nil
	})
	t.Logf("DE routed %v after its InferenceService turned Ready", time.Since(start).Round(time.Millisecond))
	// A forecast cached before is recomputed within the gateway's retry
	// interval (1 min); a gateway started now forecasts DE with the model
	// at once.
	after := startGate(t, bin, nil, discovery...)
	if src, m := after.sourceOf(t, "DE"); src != "zone" || m != name {
		t.Errorf("DE forecast by %q (%s), want %s (zone)", m, src, name)
	}
	if backend.Infers() == 0 {
		t.Errorf("the predictor was not called")
	}

	if err := isvcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	for _, g := range []*gate{before, after} {
		eventually(t, 30*time.Second, "DE no longer routed after deletion", func() error {
			if routes := g.routeLog(t); len(routes) == 0 || routes[len(routes)-1] != "-"+label {
				return fmt.Errorf("routes %v, want the last -%s", routes, label)
			}
			return nil
		})
	}
	t.Logf("DE unrouted %v after its InferenceService was deleted", time.Since(start).Round(time.Millisecond))
}

// routeLog returns the route changes carbongate logged, in order: "+label"
// for an endpoint routed, "-label" for one no longer routed.
func (g *gate) routeLog(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(g.Log(), "\n") {
		var rec struct{ Msg, Endpoint string }
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec.Msg {
		case "endpoint routed":
			out = append(out, "+"+rec.Endpoint)
		case "endpoint no longer routed":
			out = append(out, "-"+rec.Endpoint)
		}
	}
	return out
}

// sourceOf asks carbongate to schedule in zone and returns the source and
// model of its forecast.
func (g *gate) sourceOf(t *testing.T, zone string) (source, model string) {
	t.Helper()
	var answer struct {
		Provenance map[string]struct{ Source, Model string } `json:"provenance"`
	}
	g.post(t, "/v1/schedule", map[string]any{"zones": []string{zone}, "duration": "PT3H"}, &answer)
	p := answer.Provenance[zone]
	return p.Source, p.Model
}
