//go:build interop

package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/test/services"
)

// exporterRegion is the location the exporter asks carbongate about: an
// Azure region name, as the exporter's users give it.
const exporterRegion = "westeurope"

// testCASDKExporter runs Azure's kubernetes-carbon-intensity-exporter,
// built from its shared source, against carbongate's Carbon Aware SDK API
// and the real API server: the exporter writes its ConfigMap, whose
// forecast must be carbongate's forecast for the region.
//
// The exporter's client calls http://api-server-svc.<namespace>.svc.cluster.local
// (no path, no port: a Kubernetes Service in a cluster). Here carbongate,
// with --casdk-root, is its HTTP proxy (HTTP_PROXY): a proxy request names
// the whole URL and carbongate answers it by its path. The API server, on
// loopback, is reached directly (Go never proxies loopback). The exporter
// also listens on :6060 and :8080, fixed; the test fails when they are
// taken.
func testCASDKExporter(t *testing.T, c *cluster, bin string) {
	for _, port := range []string{"6060", "8080"} {
		ln, err := net.Listen("tcp", ":"+port)
		if err != nil {
			t.Fatalf("the exporter listens on :%s, which is taken: %v", port, err)
		}
		ln.Close()
	}
	exporter := services.BuildExporter(t)
	g := startGate(t, bin, nil, "--casdk-root")
	const ns = "casdk-exporter"
	c.namespace(t, ns, nil)
	kubeconfig := c.kubeconfig(t, "carbon-data-exporter", "system:masters")
	var cm *corev1.ConfigMap
	services.StartBinary(t, services.Binary{
		Name: "exporter", Path: exporter,
		Args: []string{"--master-kubeconfig", kubeconfig, "--region", exporterRegion,
			"--configmap-name", "carbon-intensity", "--patrol-interval", "12h"},
		Env: []string{"NAMESPACE_NAME=" + ns, "POD_NAME=carbon-data-exporter",
			"HTTP_PROXY=" + g.URL, "http_proxy=" + g.URL, "NO_PROXY=", "no_proxy="},
		// Ready once the ConfigMap is written: the exporter waits 5 s before
		// it starts, then asks carbongate once.
		Ready: func(ctx context.Context) error {
			var err error
			cm, err = c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "carbon-intensity", metav1.GetOptions{})
			return err
		},
		Timeout: 2 * time.Minute,
	})

	// carbongate's own answer to the same question, asked now: the
	// replay clock has not reached the next hour, so the forecast is the
	// one the exporter got.
	resp, err := g.client.Get(g.URL + "/casdk/emissions/forecasts/current?location=" + exporterRegion)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type point struct {
		Location  string  `json:"location"`
		Timestamp string  `json:"timestamp"`
		Duration  int     `json:"duration"`
		Value     float64 `json:"value"`
	}
	var fcs []struct {
		DataStartAt  string  `json:"dataStartAt"`
		ForecastData []point `json:"forecastData"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&fcs); err != nil || resp.StatusCode != http.StatusOK || len(fcs) != 1 {
		t.Fatalf("carbongate's forecast: status %d, %v, %d forecasts", resp.StatusCode, err, len(fcs))
	}
	want := fcs[0]
	// And the gateway's native forecast of the region's zone: the SDK's
	// points are its hours, unwindowed.
	m := regexp.MustCompile(`zone="([^"]+)"`).FindStringSubmatch(resp.Header.Get("Carbongate-Provenance"))
	if m == nil {
		t.Fatalf("no zone in Carbongate-Provenance %q", resp.Header.Get("Carbongate-Provenance"))
	}
	zone := m[1]
	native := nativeForecast(t, g, zone)

	if msg := cm.Data["message"]; msg != "" {
		t.Errorf("the ConfigMap's message is %q, want none (the exporter got no forecast?)", msg)
	}
	var got []point
	if err := json.Unmarshal(cm.BinaryData["data"], &got); err != nil {
		t.Fatalf("the ConfigMap's data is not the SDK's forecast points: %v\n%s", err, cm.BinaryData["data"])
	}
	if len(got) == 0 || len(got) != len(want.ForecastData) || len(got) != len(native) {
		t.Fatalf("the ConfigMap holds %d points, carbongate's SDK answer %d, its forecast of %s %d hours", len(got), len(want.ForecastData), zone, len(native))
	}
	lo, hi := got[0].Value, got[0].Value
	for i, p := range got {
		if p != want.ForecastData[i] {
			t.Errorf("point %d: ConfigMap %+v, carbongate %+v", i, p, want.ForecastData[i])
		}
		if ts, _ := time.Parse(time.RFC3339, p.Timestamp); !ts.Equal(native[i].at) || p.Value != native[i].value || p.Duration != 60 {
			t.Errorf("point %d: ConfigMap %+v, carbongate's forecast of %s %v %v", i, p, zone, native[i].at, native[i].value)
		}
		lo, hi = min(lo, p.Value), max(hi, p.Value)
	}
	for k, v := range map[string]string{"numOfRecords": strconv.Itoa(len(got)), "minForecast": fmt.Sprintf("%f", lo), "maxForecast": fmt.Sprintf("%f", hi)} {
		if cm.Data[k] != v {
			t.Errorf("ConfigMap %s=%q, want %q", k, cm.Data[k], v)
		}
	}
	// forecastDateTime is Go's time.String of dataStartAt.
	start, err := time.Parse(time.RFC3339, want.DataStartAt)
	if err != nil {
		t.Fatal(err)
	}
	if f := cm.Data["forecastDateTime"]; !strings.HasPrefix(f, start.Format("2006-01-02 15:04:05")) {
		t.Errorf("ConfigMap forecastDateTime=%q, want %s", f, start)
	}
	t.Logf("the exporter wrote %d points of %s (zone %s) from %s, min %s max %s", len(got), exporterRegion, zone, cm.Data["forecastDateTime"], cm.Data["minForecast"], cm.Data["maxForecast"])
}

type hour struct {
	at    time.Time
	value float64
}

// nativeForecast is carbongate's GET /v1/forecast of zone, hour by hour.
func nativeForecast(t *testing.T, g *gate, zone string) []hour {
	t.Helper()
	resp, err := g.client.Get(g.URL + "/v1/forecast?zone=" + zone)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var fc struct {
		Start  time.Time `json:"start"`
		Values []float64 `json:"values"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&fc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/forecast?zone=%s: status %d, %v", zone, resp.StatusCode, err)
	}
	out := make([]hour, len(fc.Values))
	for i, v := range fc.Values {
		out[i] = hour{fc.Start.Add(time.Duration(i) * time.Hour), v}
	}
	return out
}
