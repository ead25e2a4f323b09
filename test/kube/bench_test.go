//go:build interop

package kube

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// benchLane is one way a VmTemplate create goes through the API server.
type benchLane struct {
	name, ns string
	webhook  bool // the create must come back scheduled (else untouched)
	lat      []time.Duration
}

func (l *benchLane) quantile(q float64) time.Duration {
	s := slices.Clone(l.lat)
	slices.Sort(s)
	return s[int(q*float64(len(s)))]
}

// BenchmarkAdmissionThroughAPIServer (make bench, -benchtime 1x) creates
// VmTemplates through a real API server in three namespaces: one no
// webhook selects, one sent to carbongate's webhook (--admission, TLS with
// the API server's client certificate) and one sent to OPA serving the
// bundle (TLS, --authentication=tls, http.send to a carbongate of its own
// without caching, so every review is scheduled by carbongate). The
// creates are sequential and take turns across the three, so drift in the
// machine's load reaches all alike; $CARBONGATE_APISERVER_CREATES (default
// 500) are timed in each after 20 untimed. It prints p50 and p99 of each
// and the p99s over the no-webhook baseline (goal: carbongate's webhook
// adds at most 5 ms to the p99).
func BenchmarkAdmissionThroughAPIServer(b *testing.B) {
	n := 500
	if s, err := strconv.Atoi(os.Getenv("CARBONGATE_APISERVER_CREATES")); err == nil && s > 0 {
		n = s
	}
	const warm = 20
	c := startCluster(b)
	bin := services.GoBuild(b, "carbongate")
	tf := newTLSFiles(b, c)
	gate := startGate(b, bin, &tf, "--admission")
	registerWebhook(b, c, "bench-carbongate", "bench-carbongate", tf.serverCA.PEM, gate.URL+admission.Path, admissionregistrationv1.Fail)
	opa := services.OPABinary(b)
	o := services.StartOPA(b, opa, services.OPAConfig{Bundle: services.BuildOPABundle(b, opa), Carbongate: startGate(b, bin, nil).URL,
		CertFile: tf.cert, KeyFile: tf.key, ClientCAFile: tf.clientCAFile})
	registerWebhook(b, c, "bench-opa", "bench-opa", tf.serverCA.PEM, o.URL+"/", admissionregistrationv1.Fail)

	lanes := []*benchLane{
		{name: "no webhook", ns: "bench-none"},
		{name: "carbongate webhook", ns: "bench-carbongate", webhook: true},
		{name: "OPA webhook", ns: "bench-opa", webhook: true},
	}
	for _, l := range lanes {
		labels := map[string]string{}
		if l.webhook {
			labels[labelMode] = l.ns
		}
		c.namespace(b, l.ns, labels)
	}
	// A client of its own without client-side rate limiting: its token
	// bucket would otherwise add waits of its own to a sequence of writes.
	cfg := rest.CopyConfig(c.cfg)
	cfg.QPS = -1
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	vmtemplates := schema.GroupVersionResource{Group: "carbongate.io", Version: "v1alpha1", Resource: "vmtemplates"}
	spec := map[string]any{"duration": "PT3H", "maxLatencyMs": int64(40), "originRegion": "westeurope", "residency": "EU",
		"deadline": "2021-06-03T00:00:00Z"}
	ctx := context.Background()
	created := 0
	for b.Loop() {
		for _, l := range lanes {
			l.lat = l.lat[:0]
		}
		for i := range warm + n {
			for j := range lanes {
				l := lanes[(i+j)%len(lanes)]
				created++
				obj := vmTemplate(l.ns, fmt.Sprintf("vm-%d", created), spec)
				start := time.Now()
				out, err := dyn.Resource(vmtemplates).Namespace(l.ns).Create(ctx, obj, metav1.CreateOptions{})
				el := time.Since(start)
				if err != nil {
					b.Fatalf("%s: create: %v", l.name, err)
				}
				if scheduled := out.GetAnnotations()[admission.AnnotationProvenance] != ""; scheduled != l.webhook {
					b.Fatalf("%s: stored with annotations %v", l.name, out.GetAnnotations())
				}
				if i >= warm {
					l.lat = append(l.lat, el)
				}
			}
		}
	}
	none, gw, viaOPA := lanes[0], lanes[1], lanes[2]
	ms := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
	over := func(l *benchLane) float64 {
		return float64(l.quantile(0.99)-none.quantile(0.99)) / float64(time.Millisecond)
	}
	testsupport.Goal(b, over(gw) <= 5, "apiserver admission: %d creates each, no webhook p50 %s p99 %s; carbongate webhook p50 %s p99 %s (%+.1f ms p99, goal <= +5 ms); OPA webhook p50 %s p99 %s (%+.1f ms p99)",
		n, ms(none.quantile(0.5)), ms(none.quantile(0.99)), ms(gw.quantile(0.5)), ms(gw.quantile(0.99)), over(gw),
		ms(viaOPA.quantile(0.5)), ms(viaOPA.quantile(0.99)), over(viaOPA))
	b.ReportMetric(over(gw), "carbongate-p99-over-ms")
	b.ReportMetric(over(viaOPA), "opa-p99-over-ms")
}
