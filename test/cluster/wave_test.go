//go:build interop

package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/carbongate/carbongate/gateway/hold"
)

// Of the wave's Jobs, waveReal run on the real nodes, the rest on the kwok
// node of polandcentral.
const (
	waveJobs = 200
	waveReal = 10
)

// waveWatch records, from informers, when each Job of a namespace was
// first seen released (and with which carbongate.io/released-at), and
// when its pod was first seen Running (or done).
type waveWatch struct {
	mu        sync.Mutex
	released  map[string]time.Time
	at        map[string]string // released-at first seen
	twice     []string          // Jobs whose released-at changed
	running   map[string]time.Time
	stop      chan struct{}
	informers informers.SharedInformerFactory
}

func watchWave(t *testing.T, c *Cluster, ns string) *waveWatch {
	t.Helper()
	w := &waveWatch{released: map[string]time.Time{}, at: map[string]string{}, running: map[string]time.Time{}, stop: make(chan struct{})}
	w.informers = informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(ns))
	onJob := func(o any) {
		j, ok := o.(*batchv1.Job)
		if !ok || j.Labels[hold.Label] != hold.Released {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, seen := w.released[j.Name]; !seen {
			w.released[j.Name], w.at[j.Name] = time.Now(), j.Annotations[hold.AnnotationReleasedAt]
		} else if w.at[j.Name] != j.Annotations[hold.AnnotationReleasedAt] {
			w.twice = append(w.twice, fmt.Sprintf("%s: released at %s, then at %s", j.Name, w.at[j.Name], j.Annotations[hold.AnnotationReleasedAt]))
		}
	}
	onPod := func(o any) {
		p, ok := o.(*corev1.Pod)
		if !ok || (p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded) {
			return
		}
		job := p.Labels["batch.kubernetes.io/job-name"]
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, seen := w.running[job]; !seen {
			w.running[job] = time.Now()
		}
	}
	for inf, on := range map[cache.SharedIndexInformer]func(any){
		w.informers.Batch().V1().Jobs().Informer(): onJob, w.informers.Core().V1().Pods().Informer(): onPod} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, o any) { on(o) }}); err != nil {
			t.Fatal(err)
		}
	}
	w.informers.Start(w.stop)
	w.informers.WaitForCacheSync(w.stop)
	t.Cleanup(func() { close(w.stop); w.informers.Shutdown() })
	return w
}

// testWave holds waveJobs Jobs in a new opted-in namespace — waveReal on
// the real nodes' regions, the rest on the kwok node's — and kills the
// controller's leader (delete, grace period 0) while they are held: the
// Deployment gets its second replica back, admission answers meanwhile
// (dry-run Jobs every 50 ms; what it does not answer the workload
// webhook's failurePolicy Ignore admits unheld), and every Job is released
// exactly once (its carbongate.io/released-at never changes, one Released
// event) and its pod runs. It logs the release -> pod Running lag.
func testWave(t *testing.T, c *Cluster, r *ChartRelease, image string) {
	ctx := context.Background()
	ns := "wave"
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{hold.NamespaceLabel: hold.NamespaceEnabled},
		Annotations: map[string]string{hold.AnnotationMaxDelay: "PT20H"}}} // twenty wall seconds
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, c, ns)
	w := watchWave(t, c, ns)
	created := time.Now()
	createWave(t, c, ns, image)
	t.Logf("%d Jobs held in %v", waveJobs, time.Since(created).Round(10*time.Millisecond))

	leader := leaderPod(t, c, "")
	p := startProbe(c, ns)
	killed := time.Now()
	if err := c.Kube.CoreV1().Pods(chartNS).Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, "two carbongate pods Ready again", func(ctx context.Context) error {
		pods, err := c.Kube.CoreV1().Pods(chartNS).List(ctx, metav1.ListOptions{LabelSelector: gatewayPods})
		if err != nil {
			return err
		}
		var ready []string
		for _, p := range pods.Items {
			if podReady(&p) && p.Name != leader && p.DeletionTimestamp == nil {
				ready = append(ready, p.Name)
			}
		}
		if len(ready) != 2 {
			return fmt.Errorf("Ready: %v", ready)
		}
		return nil
	})
	recovered := time.Since(killed)
	newLeader := leaderPod(t, c, leader)
	led := time.Since(killed)
	summary := p.finish()
	t.Logf("figures: leader %s killed (grace 0): %s leads %v after, 2 pods Ready again after %v; admission meanwhile: %s", leader, newLeader, led.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond), summary)
	if len(p.errs) > 0 || p.answered == 0 {
		t.Errorf("admission during the kill: %s; errors %v", summary, p.errs)
	}

	Eventually(t, 3*time.Minute, "every Job released and its pod running", func(context.Context) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.released) < waveJobs || len(w.running) < waveJobs {
			return fmt.Errorf("%d released, %d pods running of %d", len(w.released), len(w.running), waveJobs)
		}
		return nil
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.twice) > 0 {
		t.Errorf("released twice: %v", w.twice)
	}
	checkReleasedOnce(t, c, ns)
	lags := map[bool][]time.Duration{}
	var all []time.Duration
	for job, at := range w.released {
		lag := max(0, w.running[job].Sub(at))
		lags[strings.HasPrefix(job, "real-")] = append(lags[strings.HasPrefix(job, "real-")], lag)
		all = append(all, lag)
	}
	// Its 200 Jobs and pods go while the test goes on (the cluster's drain
	// would wait for them).
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	pa, pr, pk := percentiles(all), percentiles(lags[true]), percentiles(lags[false])
	t.Logf("figures: held Job released -> pod Running (watched), %d Jobs: p50 %v p99 %v; on the real nodes (%d) p50 %v p99 %v; on kwok (%d) p50 %v p99 %v; all released and running %v after the first was held",
		len(all), pa[0], pa[1], len(lags[true]), pr[0], pr[1], len(lags[false]), pk[0], pk[1], time.Since(created).Round(100*time.Millisecond))
}

// createWave creates the wave's Jobs, 8 at a time, and checks each is held.
func createWave(t *testing.T, c *Cluster, ns, image string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, waveJobs)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				errs <- createWaveJob(c, ns, image, i)
			}
		})
	}
	for i := range waveJobs {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func createWaveJob(c *Cluster, ns, image string, i int) error {
	j := probeJob(fmt.Sprintf("kwok-%03d", i), nil)
	spec := &j.Spec.Template.Spec
	spec.Containers[0].Image, spec.Containers[0].Args, spec.Containers[0].ImagePullPolicy = image, []string{"--version"}, corev1.PullNever
	spec.NodeSelector = map[string]string{RegionLabel: "polandcentral"}
	spec.Tolerations = []corev1.Toleration{KwokToleration}
	if i < waveReal {
		j.Name = fmt.Sprintf("real-%03d", i)
		spec.NodeSelector[RegionLabel] = []string{"westeurope", "swedencentral"}[i%2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if j.Labels[hold.Label] != hold.Held {
		return fmt.Errorf("job %s: labels %v, want held", j.Name, j.Labels)
	}
	return nil
}

// leaderPod is the pod holding the controller's Lease, once it is not
// gone (a killed leader's name stays until the Lease expires).
func leaderPod(t *testing.T, c *Cluster, gone string) string {
	t.Helper()
	var name string
	Eventually(t, time.Minute, "a controller leader other than "+gone, func(ctx context.Context) error {
		l, err := c.Kube.CoordinationV1().Leases(chartNS).Get(ctx, "carbongate-controller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease unheld")
		}
		name, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_")
		if name == gone {
			return fmt.Errorf("%s still holds the Lease", gone)
		}
		return nil
	})
	return name
}

// checkReleasedOnce checks that carbongate recorded one Released event
// per Job of ns (a second release would record another).
func checkReleasedOnce(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	evs, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Job,reason=Released"})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int32{}
	for _, e := range evs.Items {
		count[e.InvolvedObject.Name] += max(1, e.Count)
	}
	var twice []string
	for job, n := range count {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s: %d", job, n))
		}
	}
	if len(twice) > 0 {
		t.Errorf("Jobs with more than one Released event: %v", twice)
	}
	t.Logf("Released events: %d Jobs of %d (an event in flight when its replica was killed is lost)", len(count), waveJobs)
}
