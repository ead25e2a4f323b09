//go:build interop

package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/gateway/hold"
)

// dryRun creates a dry-run probe Job (labels added) in ns: it reports
// whether carbongate's webhook decided it (held it, or let it run now:
// either way its decided start is recorded), and how long the API call
// took.
func dryRun(ctx context.Context, kc kubernetes.Interface, ns string, labels map[string]string) (decided bool, took time.Duration, err error) {
	annotations, took, err := dryRunAnnotations(ctx, kc, ns, labels)
	return annotations[hold.AnnotationStart] != "", took, err
}

// dryRunAnnotations creates a dry-run probe Job (labels added) in ns and
// returns the annotations it was admitted with, and how long the API call
// took.
func dryRunAnnotations(ctx context.Context, kc kubernetes.Interface, ns string, labels map[string]string) (map[string]string, time.Duration, error) {
	start := time.Now()
	j, err := kc.BatchV1().Jobs(ns).Create(ctx, probeJob("probe", labels), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	took := time.Since(start)
	if err != nil {
		return nil, took, err
	}
	return j.Annotations, took, nil
}

// waitDecided waits, up to timeout, until carbongate's webhook decides a
// dry-run probe Job in ns (free to go anywhere) created through kc. Its
// failure shows the last probe's annotations: carbongate.io/unscheduled
// says why a Job went undecided.
func waitDecided(tb testing.TB, kc kubernetes.Interface, ns string, timeout time.Duration) {
	tb.Helper()
	Eventually(tb, timeout, "a dry-run Job in "+ns+" decided", func(ctx context.Context) error {
		annotations, _, err := dryRunAnnotations(ctx, kc, ns, nil)
		if err != nil {
			return err
		}
		if annotations[hold.AnnotationStart] == "" {
			return fmt.Errorf("undecided, annotations %v", annotations)
		}
		return nil
	})
}

// admissionFigures logs the latency of creating a Job through carbongate's
// webhook, reached through its Service, against the same with the webhook
// skipped (admissionLatency). The chart's replay clock turns an hour every
// second here: each turn recomputes the forecasts, which requests then
// wait for (once an hour on a real clock), so the p99 is a pessimistic
// one; make bench measures it on a real clock (BenchmarkAdmissionThroughService).
func admissionFigures(t *testing.T, c *Cluster, ns string) {
	const n = 500
	with, without := admissionLatency(t, c, ns, n)
	pw, pn := percentiles(with), percentiles(without)
	t.Logf("figures: admission of a Job through the webhook's Service, carbongate as 2 pods (replay clock an hour a second): p50 %v p99 %v; no webhook: p50 %v p99 %v; added p50 %v p99 %v (%d each, server-side dry runs, sequential)",
		pw[0], pw[1], pn[0], pn[1], pw[0]-pn[0], pw[1]-pn[1], n)
}

// admissionLatency times n creates of a Job (server-side dry runs) in ns
// through carbongate's webhook and n with the webhook skipped (label
// carbongate.io/schedule=disabled, which the webhook's objectSelector
// leaves out), interleaved, once the webhook answers through its Service
// (kube-proxy programs it a moment after the pods are Ready; until then the
// workload webhook's failurePolicy Ignore admits undecided) and after 20
// untimed pairs (the API server's first calls open its connections to the
// webhook's pods).
func admissionLatency(tb testing.TB, c *Cluster, ns string, n int) (with, without []time.Duration) {
	tb.Helper()
	const warm = 20
	ctx := context.Background()
	// A client without client-side rate limiting: its token bucket would
	// add waits of its own to a sequence of calls.
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS = -1
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	waitDecided(tb, kc, ns, time.Minute) // carbongate's webhook answers through its Service
	for i := range 2 * (warm + n) {
		var labels map[string]string
		if i%2 == 1 {
			labels = map[string]string{hold.NamespaceLabel: "disabled"}
		}
		decided, took, err := dryRun(ctx, kc, ns, labels)
		if err != nil {
			tb.Fatal(err)
		}
		if decided != (labels == nil) {
			tb.Fatalf("dry run %d: decided %v with labels %v", i, decided, labels)
		}
		switch {
		case i < 2*warm:
		case labels == nil:
			with = append(with, took)
		default:
			without = append(without, took)
		}
	}
	return with, without
}

// percentiles returns the p50 and p99 of ds, to 0.1 ms (10 ms above a
// second).
func percentiles(ds []time.Duration) [2]time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration {
		d := s[min(len(s)-1, int(q*float64(len(s))))]
		if d > time.Second {
			return d.Round(10 * time.Millisecond)
		}
		return d.Round(100 * time.Microsecond)
	}
	return [2]time.Duration{at(0.50), at(0.99)}
}

// probe creates a dry-run Job in an opted-in namespace every 50 ms until
// stopped, counting those carbongate held (it answered), those admitted
// unheld (the workload webhook's failurePolicy Ignore: it did not answer
// in time) and the API's errors.
type probe struct {
	answered, ignored int
	errs              []string
	stop              chan struct{}
	done              sync.WaitGroup
}

func startProbe(c *Cluster, ns string) *probe {
	p := &probe{stop: make(chan struct{})}
	p.done.Go(func() {
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			decided, took, err := dryRun(ctx, c.Kube, ns, nil)
			cancel()
			switch {
			case err != nil:
				p.errs = append(p.errs, fmt.Sprintf("after %v: %v", took.Round(time.Millisecond), err))
			case decided:
				p.answered++
			default:
				p.ignored++
			}
		}
	})
	return p
}

// finish stops p and returns a summary.
func (p *probe) finish() string {
	close(p.stop)
	p.done.Wait()
	return fmt.Sprintf("%d answered, %d admitted unheld (failurePolicy Ignore), %d errors", p.answered, p.ignored, len(p.errs))
}
