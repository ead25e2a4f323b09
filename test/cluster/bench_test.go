//go:build interop

package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/testsupport"
)

// BenchmarkAdmissionThroughService (make bench, -benchtime 1x, as root)
// starts the real cluster, installs the chart with carbongate as the
// workload webhook (two pods, reached through its Service) on a real-time
// clock, as in production, and times 2,000 Job creates (server-side dry runs)
// through the webhook against 2,000 the webhook skips, interleaved. Goal:
// the webhook adds at most 5 ms to the p99.
func BenchmarkAdmissionThroughService(b *testing.B) {
	const creates, ns = 2000, "bench"
	archives, _ := ProjectImages(b)
	c := Start(b, Options{Regions: []string{"westeurope", "swedencentral"}, KwokRegions: []string{"polandcentral"}, Images: archives})
	InstallChart(b, c, 1)
	// Opted in, as the loop's namespaces: each Job gets a decision within
	// ten hours.
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{hold.NamespaceLabel: hold.NamespaceEnabled},
		Annotations: map[string]string{hold.AnnotationMaxDelay: "PT10H"}}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var with, without []time.Duration
	for b.Loop() {
		with, without = admissionLatency(b, c, ns, creates)
	}
	pw, pn := percentiles(with), percentiles(without)
	added := pw[1] - pn[1]
	testsupport.Goal(b, added <= 5*time.Millisecond, "cluster admission: %d Job creates each through carbongate's Service (2 pods, real-time clock) p50 %v p99 %v; no webhook p50 %v p99 %v; added p50 %v p99 %v (goal <= +5 ms p99)",
		creates, pw[0], pw[1], pn[0], pn[1], pw[0]-pn[0], added)
	b.ReportMetric(float64(added)/float64(time.Millisecond), "p99-added-ms")
}
