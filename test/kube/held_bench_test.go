//go:build interop

package kube

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// BenchmarkHeldWorkloads (make bench, -benchtime 1x) holds
// $CARBONGATE_HELD_WORKLOADS (default 10,000) Jobs on a real API server
// with one carbongate --controller on a wall-speed replay clock: the Jobs
// are created held (as the webhook stores them) with release times spread
// over a minute after they all exist; a watch records when each is
// unsuspended. It prints the release lag (seen by the watch, from the
// decided time; goal p99 < 1 s), the controller's RSS per 1,000 held
// Jobs over its RSS before, and its CPU while it holds them all and none
// is due (goal: about nothing: no per-object polling).
func BenchmarkHeldWorkloads(b *testing.B) {
	n := 10000
	if s, err := strconv.Atoi(os.Getenv("CARBONGATE_HELD_WORKLOADS")); err == nil && s > 0 {
		n = s
	}
	const spread = time.Minute
	c := startCluster(b)
	bin := services.GoBuild(b, "carbongate")
	keyFile, signer := decisionKey(b)
	g := startGate(b, bin, nil, "--controller", "--kubeconfig", c.kubeconfig(b, "bench-controller", "system:masters"),
		"--controller-namespace", "default", "--log-level", "warn", "--decision-key-file", keyFile)
	cfg := rest.CopyConfig(c.cfg)
	cfg.QPS = -1
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	const ns = "held"
	c.namespace(b, ns, nil)
	time.Sleep(2 * time.Second) // the controller's caches synced, its leadership taken
	rss0, err := g.StatusKiB("VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		// Creation at ~100/s or better leaves n/100 s; the releases start after.
		wall0, replay0 := time.Now(), g.now(b)
		first := time.Duration(n/100)*time.Second + 20*time.Second
		due := make([]time.Time, n) // wall time each is due
		ctx := context.Background()
		watchFrom := func(rv string) (watch.Interface, error) {
			return kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{LabelSelector: hold.Label + "=" + hold.Released, ResourceVersion: rv})
		}
		w, err := watchFrom("")
		if err != nil {
			b.Fatal(err)
		}
		created := createHeld(b, kube, signer, ns, n, func(i int) hold.Decision {
			// The annotations hold whole seconds: due at the second.
			start := replay0.Add(first + time.Duration(i)*spread/time.Duration(n)).Truncate(time.Second)
			due[i] = wall0.Add(start.Sub(replay0))
			return hold.Decision{Zone: "SE", Start: start, ReleaseBy: start.Add(time.Hour)}
		})
		if left := time.Until(wall0.Add(first)); left < 5*time.Second {
			b.Fatalf("creating %d Jobs took %v: fewer than 5 s left before the first release", n, created)
		}
		rss, err := g.StatusKiB("VmRSS")
		if err != nil {
			b.Fatal(err)
		}
		cpu0, idle0 := services.ProcCPU(b, g.Pid()), time.Now()
		time.Sleep(time.Until(wall0.Add(first)) - time.Second)
		idleCPU := float64(services.ProcCPU(b, g.Pid())-cpu0) / float64(time.Since(idle0))
		lags := watchReleases(b, w, watchFrom, due, wall0.Add(first+spread+time.Minute))
		slices.Sort(lags)
		q := func(p float64) time.Duration {
			return lags[min(len(lags)-1, int(p*float64(len(lags))))].Round(time.Millisecond)
		}
		testsupport.Goal(b, q(0.99) < time.Second, "held workloads: %d Jobs created held in %v; controller RSS %.0f MiB idle, %.0f MiB holding them (%.2f MiB per 1,000); CPU while holding, none due: %.1f %% of a core; release lag p50 %v p99 %v max %v (goal p99 < 1s)",
			n, created.Round(100*time.Millisecond), float64(rss0)/1024, float64(rss)/1024, float64(rss-rss0)/1024/float64(n)*1000,
			100*idleCPU, q(0.5), q(0.99), lags[len(lags)-1].Round(time.Millisecond))
		b.ReportMetric(q(0.99).Seconds(), "p99-lag-s")
	}
}

// createHeld creates n held Jobs (decision d(i)) from 16 goroutines and
// returns how long it took.
func createHeld(b *testing.B, kube kubernetes.Interface, signer *hold.Signer, ns string, n int, d func(int) hold.Decision) time.Duration {
	b.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				name := fmt.Sprintf("job-%05d", i)
				j := testJob(name, signed(signer, ns, name, d(i)))
				j.Labels = map[string]string{hold.Label: hold.Held}
				j.Spec.Suspend = new(true)
				if _, err := kube.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// watchReleases returns the lag of every release the watch shows (due[i]
// is when job-i was due), until all are seen or deadline passes. A watch
// the API server ends is resumed from the last resource version seen.
func watchReleases(b *testing.B, w watch.Interface, rewatch func(rv string) (watch.Interface, error), due []time.Time, deadline time.Time) []time.Duration {
	b.Helper()
	defer func() { w.Stop() }()
	rv := ""
	seen := make(map[string]bool, len(due))
	lags := make([]time.Duration, 0, len(due))
	timeout := time.After(time.Until(deadline))
	for len(lags) < len(due) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				var err error
				if w, err = rewatch(rv); err != nil {
					b.Fatalf("resuming the watch after %d of %d releases: %v", len(lags), len(due), err)
				}
				continue
			}
			j, isJob := ev.Object.(*batchv1.Job)
			if !isJob {
				if st, isStatus := ev.Object.(*metav1.Status); isStatus {
					b.Fatalf("the watch failed after %d of %d releases: %s", len(lags), len(due), st.Message)
				}
				continue
			}
			rv = j.ResourceVersion
			if seen[j.Name] || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
				continue
			}
			i, err := strconv.Atoi(j.Name[len("job-"):])
			if err != nil {
				b.Fatal(err)
			}
			seen[j.Name] = true
			lags = append(lags, time.Since(due[i]))
		case <-timeout:
			b.Fatalf("%d of %d Jobs released by %v", len(lags), len(due), deadline)
		}
	}
	return lags
}
