//go:build interop

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/test/services"
)

// startClusterGate installs the chart as a second release, carbongate in
// kserveNS, with KServe discovery on (the chart's Role lets its service
// account list and watch the namespace's InferenceServices), one replica
// on a real node, the replay clock at replayStart and extraArgs added. It
// waits until the pod is Ready and returns carbongate's URL through its
// Service's ClusterIP, for the host; it uninstalls the release at
// cleanup. The pod resolves every name through the cluster's DNS: the
// predictors' in-cluster URLs KServe writes in their status, and the API
// server's name, kubernetes.default.svc.cluster.local, which its
// in-cluster client is given in place of the kubernetes Service's
// ClusterIP (KUBERNETES_SERVICE_HOST; the container's own variable wins
// over the kubelet's): discovery works only if both resolve.
func startClusterGate(t *testing.T, c *Cluster, extraArgs ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args, err := json.Marshal(extraArgs)
	if err != nil {
		t.Fatal(err)
	}
	r := newChartRelease(t, c, kserveNS, fmt.Sprintf(`image: {pullPolicy: Never}
gateway:
  replicas: 1
  replayStart: %q
  extraArgs: %s
  extraEnv: [{name: KUBERNETES_SERVICE_HOST, value: %q}]
kserve: {discovery: {enabled: true}}
`, replayStart, args, dnsProbe))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if t.Failed() {
			t.Logf("carbongate's log:\n%s", services.TailLines(gateLog(c), 40))
		}
		r.run(t, ctx, "uninstall", "carbongate", "--wait", "--timeout", "90s")
	})
	start := time.Now()
	// --skip-crds: the gateway needs no VmTemplate CRD; the chart's
	// release in chartNS installs it later.
	r.run(t, ctx, "install", "carbongate", r.chart, "-f", r.values, "--skip-crds", "--wait", "--timeout", "3m")
	pods, err := c.Kube.CoreV1().Pods(kserveNS).List(ctx, metav1.ListOptions{LabelSelector: gatewayPods})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		t.Logf("figures: helm install --wait, carbongate %s Ready on %s in %v", p.Name, p.Spec.NodeName, time.Since(start).Round(100*time.Millisecond))
	}
	base, err := serviceURL(ctx, c, "carbongate")
	if err != nil {
		t.Fatal(err)
	}
	return base + ":8080"
}

// inClusterURL returns the URL of InferenceService name's predictor (its
// status, where carbongate's discovery reads it) and fails t unless its
// host is an in-cluster name, which only the cluster's DNS resolves.
func inClusterURL(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	u, err := dynamicClient(t, c).Resource(isvcResource).Namespace(kserveNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var isvc kserve.InferenceService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &isvc); err != nil {
		t.Fatal(err)
	}
	pred := isvc.Status.Components[kserve.PredictorComponent]
	p, err := url.Parse(pred.URL)
	if err != nil || !strings.HasSuffix(p.Hostname(), "."+clusterDomain) {
		t.Errorf("%s's predictor URL %q (%v), want a host in %s", name, pred.URL, err, clusterDomain)
	}
	return pred.URL
}

// gateLog returns the log of kserveNS's carbongate pods.
func gateLog(c *Cluster) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := c.Kubectl(ctx, "logs", "-n", kserveNS, "-l", gatewayPods, "--tail=-1")
	if err != nil {
		return err.Error()
	}
	return out
}

// inferCalls reads carbonserve_infer_requests_total{model=name,status=ok}
// from the /metrics of Service svc in kserveNS, through its ClusterIP.
func inferCalls(ctx context.Context, c *Cluster, svc, model string) (float64, error) {
	base, err := serviceURL(ctx, c, svc)
	if err != nil {
		return 0, err
	}
	body, err := httpDo(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	want := fmt.Sprintf(`carbonserve_infer_requests_total{model=%q,status="ok"} `, model)
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, sc.Err()
}

// serviceURL returns http://<ClusterIP> of Service svc in kserveNS (port
// 80 when none is added, as KServe's predictor Services listen).
func serviceURL(ctx context.Context, c *Cluster, svc string) (string, error) {
	s, err := c.Kube.CoreV1().Services(kserveNS).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return "http://" + s.Spec.ClusterIP, nil
}

// forecastSource asks carbongate at base to schedule in zone and returns
// the provenance of its forecast.
func forecastSource(ctx context.Context, base, zone string) (api.Provenance, error) {
	req, err := json.Marshal(map[string]any{"zones": []string{zone}, "duration": "PT3H"})
	if err != nil {
		return api.Provenance{}, err
	}
	body, err := httpDo(ctx, http.MethodPost, base+"/v1/schedule", req)
	if err != nil {
		return api.Provenance{}, err
	}
	var answer api.Schedule
	if err := json.Unmarshal(body, &answer); err != nil {
		return api.Provenance{}, err
	}
	return answer.Provenance[zone], nil
}

// httpDo sends a request (a JSON body when body is not nil) and returns
// the body of a 200 answer, an error otherwise.
func httpDo(ctx context.Context, method, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return b, nil
}
