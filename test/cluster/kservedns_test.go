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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/test/services"
)

// startResolvingGate starts bin's carbongate on the host with args, able
// to resolve the in-cluster names of kserveNS's Services as pods do: this
// cluster runs no DNS server, so the names and ClusterIPs the API server
// holds go into a hosts file that is bind-mounted over /etc/hosts in a
// mount namespace of carbongate's own (unshare; gone with the process,
// nothing changes on the host). Its calls then go to the ClusterIPs,
// through kube-proxy's rules, to the pods. It returns carbongate's URL
// and process.
func startResolvingGate(t *testing.T, c *Cluster, bin string, args ...string) (string, *services.Proc) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux): %v", err)
	}
	hosts := clusterHosts(t, c, kserveNS)
	var base string
	p := services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: unshare,
		ArgsFor: func() []string {
			port := services.FreePort(t)
			base = fmt.Sprintf("http://127.0.0.1:%d", port)
			return append([]string{"--mount", "--", "/bin/sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts,
				filepath.Join(bin, "carbongate"), "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--drain-delay", "0s", "--access-log=false"}, args...)
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(base + "/readyz")(ctx) },
	})
	return base, p
}

// clusterHosts writes a hosts file naming each Service of ns by its
// in-cluster name, <service>.<ns>.svc.cluster.local, and returns its path.
func clusterHosts(t *testing.T, c *Cluster, ns string) string {
	t.Helper()
	svcs, err := c.Kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := []byte("127.0.0.1 localhost\n")
	for _, s := range svcs.Items {
		if s.Spec.ClusterIP != "" && s.Spec.ClusterIP != "None" {
			b = fmt.Appendf(b, "%s %s.%s.%s\n", s.Spec.ClusterIP, s.Name, ns, clusterDomain)
		}
	}
	p := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
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
// 80, as KServe's predictor Services listen).
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
