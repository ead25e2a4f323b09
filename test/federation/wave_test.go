//go:build interop

package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// waveJobs is how many Jobs testHoldingWave holds, on the holding tests'
// clock from waveStart: every binding is decided within one forecast hour,
// for the same second (as from holdStart), a minute of wall time after
// the clock starts: Karmada's scheduler, which places about 15 bindings a
// second, has placed them all (staged, waveAhead before the release) by
// then, as it has in production where decisions are made hours ahead.
const (
	waveJobs  = 200
	waveStart = "2021-06-02T21:55:00Z"
)

// testHoldingWave holds waveJobs Jobs through carbongate on the federation
// (one replica, the controller and the webhook) until the same decided
// second and measures, for each, the lag from that second to its
// appearing in its member: none may appear before, or in another member
// than its binding's; the figures are the lag's p50/p99 and the webhook's
// on bindings; it returns the lag's.
func testHoldingWave(t *testing.T, f *Federation) waveFigures {
	const ns = "wave"
	createNamespace(t, f, ns)
	g := startRegisteredGate(t, f, "carbongate-wave", append(heldArgs(t, f, waveStart), "--access-log=true", "--karmada-schedule-ahead", waveAhead.String())...)
	createPolicy(t, f, ns, "every-job", map[string]any{"apiVersion": "batch/v1", "kind": "Job"})
	seen := watchJobs(t, f, ns)
	d, clk := decideHeld(t, g, f)
	start := time.Now()
	parallel(t, 8, waveJobs, func(i int) error {
		return newJob(f, ns, fmt.Sprintf("wave-%03d", i), map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"})
	})
	t.Logf("figures: %d Jobs created on Karmada in %v", waveJobs, time.Since(start).Round(time.Millisecond))
	cluster.Eventually(t, time.Minute, fmt.Sprintf("%d bindings placed", waveJobs), func(ctx context.Context) error {
		l, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		byState := map[string]int{}
		for _, b := range l.Items {
			st := b.GetLabels()[hold.Label]
			if why := b.GetAnnotations()[admission.AnnotationUnscheduled]; why != "" {
				st = "unplaced: " + why
			}
			byState[st]++
		}
		if byState[hold.Held]+byState[hold.Released] < waveJobs {
			return fmt.Errorf("%d of %d (bindings by state: %v)", byState[hold.Held]+byState[hold.Released], waveJobs, byState)
		}
		return nil
	})
	t.Logf("figures: their %d bindings placed %v after the first Job's creation, %v before their decided release",
		waveJobs, time.Since(start).Round(time.Millisecond), time.Until(clk.wallOf(d.Decision.Start)).Round(time.Millisecond))

	time.Sleep(time.Until(clk.wallOf(d.Decision.Start)))
	cpu, released := f.CPU(), time.Now()
	cluster.Eventually(t, 3*time.Minute, fmt.Sprintf("%d Jobs in members", waveJobs), func(context.Context) error {
		if n := seen.count(); n < waveJobs {
			return fmt.Errorf("%d of %d", n, waveJobs)
		}
		return nil
	})
	took := time.Since(released)
	t.Logf("figures: CPU of the federation's processes (carbongate's among them) from the decided second to the last Job in its member, %v (2 cores: %.0f s at most): %s",
		took.Round(time.Second), 2*took.Seconds(), topCPU(spent(cpu, f.CPU()), 6))
	bindings, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lags, ctl []float64 // seconds: to the Job in its member, to the release
	for _, b := range bindings.Items {
		lags = append(lags, waveLag(t, b, seen, clk).Seconds())
		a := b.GetAnnotations()
		dec, _ := hold.Parse(a)
		if at, err := time.Parse(time.RFC3339, a[hold.AnnotationReleasedAt]); err == nil {
			ctl = append(ctl, clk.wallOf(at).Sub(clk.wallOf(dec.ReleaseAt())).Seconds())
		}
	}
	if len(lags) != waveJobs {
		t.Fatalf("%d bindings, want %d", len(lags), waveJobs)
	}
	sched := scheduledLags(bindings.Items, clk)
	web := webhookDurations(t, g)
	t.Logf("figures: release lag of %d held Jobs released at the same second (decided second → the Job in its member) p50 %.2f s, p99 %.2f s, max %.2f s; "+
		"to the controller's release (its stamp, to %v) p50 %.2f s, p99 %.2f s; Karmada's scheduling (its condition, to 1 s; staged %v ahead: negative is before the release) p50 %.0f s, p99 %.0f s, %d of %d scheduled before their release; "+
		"%v staged; binding webhook p50 %.1f ms, p99 %.1f ms over %d reviews",
		len(lags), forecast.Quantile(lags, 0.5), forecast.Quantile(lags, 0.99), slices.Max(lags), time.Second/holdSpeed,
		forecast.Quantile(ctl, 0.5), forecast.Quantile(ctl, 0.99), waveAhead, forecast.Quantile(sched, 0.5), forecast.Quantile(sched, 0.99),
		countBelow(sched, 0), len(sched), g.metric(t, `carbongate_controller_staged_total{kind="resourcebinding"}`),
		forecast.Quantile(web, 0.5), forecast.Quantile(web, 0.99), len(web))
	return waveFigures{p50: forecast.Quantile(lags, 0.5), p99: forecast.Quantile(lags, 0.99)}
}

// waveFigures are the p50 and p99 of a wave's release lag, in seconds.
type waveFigures struct{ p50, p99 float64 }

// waveGoal is the release lag's p99 goal for a wave of waveJobs.
const waveGoal = 2.0

// waveAhead is how long before their release testHoldingWave's bindings
// are staged: the chart's default, more than the whole hold here.
const waveAhead = time.Minute

// countBelow counts the values of vs below v.
func countBelow(vs []float64, v float64) int {
	n := 0
	for _, x := range vs {
		if x < v {
			n++
		}
	}
	return n
}

// controllerArgs are the flags of a carbongate whose controller releases
// bindings on the federation (its Lease and the VmTemplate CRD its
// controller watches on Karmada's API server), its replay clock at speed.
func controllerArgs(t *testing.T, f *Federation, speed int) []string {
	t.Helper()
	const leaseNS = "carbongate-system"
	f.create(f.Karmada, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}})
	f.kubectl(f.Karmada, nil, "apply", "--server-side", "-f", filepath.Join(services.RepoRoot(t), "deploy", "crd", "vmtemplate.yaml"))
	return []string{"--controller", "--kubeconfig", f.Karmada.Kubeconfig, "--controller-namespace", leaseNS,
		"--decision-key-file", keyFile(t), "--replay-speed", fmt.Sprint(speed), "--redecide=false",
		"--leader-lease-duration", "3s", "--leader-renew-deadline", "2s", "--leader-retry-period", "500ms"}
}

// waveLag checks binding b (held, then released into one member) against
// where and when its Job was seen and returns the lag after its decided
// release.
func waveLag(t *testing.T, b unstructured.Unstructured, seen *sightings, clk replayClock) time.Duration {
	t.Helper()
	a := b.GetAnnotations()
	if why := a[admission.AnnotationUnscheduled]; why != "" {
		t.Fatalf("binding %s not placed: %s", b.GetName(), why)
	}
	dec, err := hold.Parse(a)
	if err != nil {
		t.Fatalf("binding %s: %v", b.GetName(), err)
	}
	job := strings.TrimSuffix(b.GetName(), "-job")
	s, ok := seen.get(job)
	if !ok || s.member != a[admission.AnnotationCluster] {
		t.Fatalf("Job %s seen in %q, its binding placed it in %q", job, s.member, a[admission.AnnotationCluster])
	}
	lag := s.at.Sub(clk.wallOf(dec.ReleaseAt()))
	if lag < 0 {
		t.Fatalf("Job %s appeared %v before its decided release %s", job, -lag, dec.ReleaseAt().Format(time.RFC3339))
	}
	return lag
}

// sighting is where and when a Job first appeared in a member.
type sighting struct {
	member string
	at     time.Time
}

// sightings are the Jobs seen in members, by name; a Job seen in two
// members fails the test.
type sightings struct {
	t   *testing.T
	mu  sync.Mutex
	m   map[string]sighting
	dup bool // one was reported
}

func (s *sightings) add(name string, at sighting) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.m[name]; ok {
		if prev.member != at.member && !s.dup {
			s.dup = true
			s.t.Errorf("Job %s in %s and in %s (the first Job seen twice)", name, prev.member, at.member)
		}
		return
	}
	s.m[name] = at
}

func (s *sightings) get(name string) (sighting, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[name]
	return v, ok
}

func (s *sightings) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// watchJobs records the Jobs of ns that appear in each member until the
// test ends.
func watchJobs(t *testing.T, f *Federation, ns string) *sightings {
	t.Helper()
	s := &sightings{t: t, m: map[string]sighting{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, m := range f.Members {
		w, err := m.Kube.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s: watching Jobs: %v", m.Name, err)
		}
		wg.Go(func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if j, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Added {
					s.add(j.Name, sighting{member: m.Name, at: time.Now()})
				}
			}
		})
	}
	return s
}

// createPolicy creates a PropagationPolicy over all members for what
// selects.
func createPolicy(t *testing.T, f *Federation, ns, name string, selects map[string]any) {
	t.Helper()
	createPlacedPolicy(t, f, ns, name, selects, map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}})
}

// createPlacedPolicy creates a PropagationPolicy with placement for what
// selects.
func createPlacedPolicy(t *testing.T, f *Federation, ns, name string, selects, placement map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"resourceSelectors": []any{selects},
			"placement":         placement,
		},
	}}
	if _, err := f.Karmada.Dynamic.Resource(PropagationPolicyResource).Namespace(ns).Create(ctx, pp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// newJob creates a Job of a pause container on Karmada with annotations.
func newJob(f *Federation, ns, name string, annotations map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}}}},
	}
	_, err := f.Karmada.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	return err
}

// parallel runs fn(0..n-1) on workers goroutines; the first error fails t.
func parallel(t *testing.T, workers, n int, fn func(i int) error) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// webhookDurations are the durations (ms) of the webhook requests in g's
// access log.
func webhookDurations(t *testing.T, g *bindingGate) []float64 {
	t.Helper()
	var ms []float64
	for line := range strings.SplitSeq(g.proc.Log(), "\n") {
		var r struct {
			Route      string  `json:"route"`
			DurationMS float64 `json:"duration_ms"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Route == admission.Path {
			ms = append(ms, r.DurationMS)
		}
	}
	if len(ms) == 0 {
		t.Fatal("no webhook request in carbongate's access log")
	}
	return ms
}

// scheduledLags are the seconds from each binding's decided release to
// Karmada's Scheduled condition on it (wall clock, to the second;
// negative: scheduled before, staged ahead).
func scheduledLags(bindings []unstructured.Unstructured, clk replayClock) []float64 {
	var out []float64
	for _, b := range bindings {
		dec, err := hold.Parse(b.GetAnnotations())
		conds, _, _ := unstructured.NestedSlice(b.Object, "status", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "Scheduled" || err != nil {
				continue
			}
			if s, ok := m["lastTransitionTime"].(string); ok {
				if at, err := time.Parse(time.RFC3339, s); err == nil {
					out = append(out, at.Sub(clk.wallOf(dec.ReleaseAt())).Seconds())
				}
			}
		}
	}
	return out
}
