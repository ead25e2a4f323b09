//go:build interop

package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
)

// TestCluster runs the loop on a real cluster: two real nodes (westeurope,
// swedencentral: kubelet and containerd each) and a kwok node
// (polandcentral). carbongate runs as the workload webhook and the
// controller on a replay clock an hour a second, first on the host, then as
// the chart's pods (its images, two replicas, leader election, the webhook
// reached through its Service). Each time, Jobs in an opted-in namespace
// are held with a decision, released at their time, placed by the
// scheduler on a node of the decided region and run the project's
// carbonctl image to Completed: one free, one pinned to the first real
// node's region, one to the kwok node's. Beside the host's loop, the chart
// runs in OPA mode (OPA's pods as the VmTemplate webhook, asking the
// chart's carbongate pod); beside its release, the chart's backfill
// CronJob runs against a PostgreSQL and an S3 store on the host.
func TestCluster(t *testing.T) {
	begin := time.Now()
	archives, images := ProjectImages(t)
	opa, _ := OPAImage(t)
	archives = append(archives, opa)
	built := buildBeside(t, "carbongate", "carbonctl")
	c := Start(t, Options{Regions: []string{"westeurope", "swedencentral"}, KwokRegions: []string{"polandcentral", notReadyRegion}, Images: archives})
	up := time.Now()
	firstPod(t, c)
	t.Logf("figures: images and cluster set-up %v; cluster up -> first pod Ready %v", up.Sub(begin).Round(100*time.Millisecond), time.Since(up).Round(100*time.Millisecond))

	bin := built()
	g := startGate(t, c, bin)
	t.Run("host", func(t *testing.T) {
		t.Run("loop", func(t *testing.T) {
			t.Parallel()
			runJobs(t, c, "loop", map[string]string{optInLabel: "yes"}, images["carbonctl"])
		})
		// Beside the loop, before the chart's webhook holds pods in every
		// namespace.
		t.Run("kserve", func(t *testing.T) {
			t.Parallel()
			testKServe(t, c, bin, images["carbonserve"])
		})
		// The chart in OPA mode, a release of its own: installed and
		// uninstalled before the chart's release in carbongate mode,
		// whose webhook would also take the VmTemplates.
		t.Run("chart-opa", func(t *testing.T) {
			t.Parallel()
			testChartOPA(t, c)
		})
	})
	g.Kill()
	if err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), "carbongate-workloads", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("chart", func(t *testing.T) {
		r := InstallChart(t, c, replaySpeed)
		t.Run("loop", func(t *testing.T) {
			runJobs(t, c, "loop-chart", nil, images["carbonctl"])
			t.Run("bare-pod", func(t *testing.T) {
				t.Parallel()
				runHeldPod(t, c, "loop-chart", images["carbonctl"])
			})
			t.Run("deadline-guard", func(t *testing.T) {
				t.Parallel()
				runGuardedJob(t, c, images["carbonctl"])
			})
		})
		t.Run("admission", func(t *testing.T) { admissionFigures(t, c, "loop-chart") })
		t.Run("backfill", func(t *testing.T) { testBackfill(t, c, bin) })
		// Not beside the wave: the leader killed there could take the
		// Unplaceable event with it.
		t.Run("not-ready", func(t *testing.T) { testNotReady(t, c, "loop-chart") })
		// Not beside the loops: it cordons a real node they use.
		t.Run("moved-off", func(t *testing.T) { testMovedOff(t, c, "loop-chart", images["carbonctl"]) })
		t.Run("wave-leader-killed", func(t *testing.T) { testWave(t, c, r, images["carbonctl"]) })
		t.Run("upgrade", func(t *testing.T) { testUpgrade(t, c, r, "loop-chart") })
		t.Run("uninstall", func(t *testing.T) { testUninstall(t, c, r) })
	})
}

// buildBeside starts building carbongate's commands cmds (as
// services.GoBuild) while the caller goes on; the function it returns
// waits for the build and returns the directory.
func buildBeside(t *testing.T, cmds ...string) func() string {
	t.Helper()
	dir, root := t.TempDir(), services.RepoRoot(t)
	var err error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		err = services.Build(root, dir, cmds...)
	}()
	t.Cleanup(func() { <-finished }) // before the directory is removed
	return func() string {
		t.Helper()
		<-finished
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
}

// runJobs runs three held Jobs side by side in a new opted-in namespace
// ns (with labels added): one free to go to the greenest region, one
// pinned to a real node's region, one to the kwok node's.
func runJobs(t *testing.T, c *Cluster, ns string, labels map[string]string, image string) {
	t.Helper()
	optIn := map[string]string{hold.NamespaceLabel: hold.NamespaceEnabled}
	maps.Copy(optIn, labels)
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: optIn,
		Annotations: map[string]string{hold.AnnotationMaxDelay: "PT10H"}}} // ten wall seconds
	if _, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultSA(t, c, ns)
	// A decision over every region needs each one's forecast: the first
	// ones are computed while the Jobs wait, and on a loaded machine that
	// can outlast carbongate's admission timeout, after which the webhook
	// admits a Job unheld (never blocking a workload). The test is about
	// the loop, so it starts once a dry-run Job free to go anywhere is
	// decided.
	waitDecided(t, c.Kube, ns, 2*time.Minute)
	for _, tc := range []struct {
		name, pin string
		nodes     []string
	}{
		{"free", "", slices.Concat(c.Nodes, c.KwokNodes)}, // the greenest of the three regions
		{"pinned-real", "westeurope", c.Nodes[:1]},        // a real node's region
		{"pinned-kwok", "polandcentral", c.KwokNodes},     // a kwok node's
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runHeldJob(t, c, ns, tc.name, tc.pin, image, tc.nodes)
		})
	}
}

// firstPod runs the pause image on a real node and waits until it is
// Ready.
func firstPod(t *testing.T, c *Cluster) {
	t.Helper()
	ctx := context.Background()
	waitDefaultSA(t, c, "default")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "first"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "pause", Image: c.PauseImage, ImagePullPolicy: corev1.PullNever}},
		Affinity:   realNodesOnly(c)}}
	if _, err := c.Kube.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 3*time.Minute, "first pod Ready", func(ctx context.Context) error {
		p, err := c.Kube.CoreV1().Pods("default").Get(ctx, "first", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if podReady(p) {
			return nil
		}
		return fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
}

func realNodesOnly(c *Cluster) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: c.Nodes}}}}}}}
}

// runHeldJob creates a Job (pinned to region pin unless empty) that runs
// image's --version, checks carbongate holds it, waits for it to complete
// and checks where its pod ran: on one of nodes, in the decided region.
func runHeldJob(t *testing.T, c *Cluster, ns, name, pin, image string, nodes []string) {
	ctx := context.Background()
	jobs := c.Kube.BatchV1().Jobs(ns)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		hold.AnnotationDuration: "PT1H", hold.AnnotationPowerWatts: "250"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Tolerations: []corev1.Toleration{KwokToleration},
			Containers:  []corev1.Container{{Name: "work", Image: image, Args: []string{"--version"}, ImagePullPolicy: corev1.PullNever}}}}}}
	if pin != "" {
		j.Spec.Template.Spec.NodeSelector = map[string]string{RegionLabel: pin}
	}
	j, err := jobs.Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Labels[hold.Label] != hold.Held {
		t.Fatalf("created: suspend=%v labels=%v annotations=%v, want suspended and held", ptrBool(j.Spec.Suspend), j.Labels, j.Annotations)
	}
	d, err := hold.Parse(j.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	if pin != "" && d.Region != pin {
		t.Fatalf("decided region %s, want the pinned %s", d.Region, pin)
	}
	t.Logf("held: region %s, start %s", d.Region, d.Start.Format(time.RFC3339))
	var releasedAt time.Time
	Eventually(t, 2*time.Minute, "job released", func(ctx context.Context) error {
		j, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if j.Labels[hold.Label] != hold.Released {
			return fmt.Errorf("label %s=%q", hold.Label, j.Labels[hold.Label])
		}
		releasedAt = time.Now()
		return nil
	})
	pod := completedPod(t, c, ns, name)
	t.Logf("figures: released -> pod Succeeded on %s in %v", pod.Spec.NodeName, time.Since(releasedAt).Round(10*time.Millisecond))
	node, err := c.Kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[RegionLabel]; got != j.Annotations[hold.AnnotationRegion] {
		t.Errorf("pod ran on %s in region %q, want the decided %q", node.Name, got, j.Annotations[hold.AnnotationRegion])
	}
	if !slices.Contains(nodes, node.Name) {
		t.Errorf("pod ran on %s, want one of %v", node.Name, nodes)
	}
	Eventually(t, time.Minute, "job Complete", func(ctx context.Context) error {
		j, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", j.Status.Conditions)
	})
}

// completedPod waits for the pod of Job name to succeed and returns it.
func completedPod(t *testing.T, c *Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(t, 2*time.Minute, "pod of "+name+" Succeeded", func(ctx context.Context) error {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return fmt.Errorf("no pod yet")
		}
		p := pods.Items[0]
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("pod %s on %q: phase %s %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
		pod = &p
		return nil
	})
	return pod
}

// waitDefaultSA waits for namespace ns's default ServiceAccount: pods are
// refused before it exists.
func waitDefaultSA(t *testing.T, c *Cluster, ns string) {
	t.Helper()
	Eventually(t, time.Minute, "default ServiceAccount in "+ns, func(ctx context.Context) error {
		_, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// ptrBool is *b, or "nil".
func ptrBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return strconv.FormatBool(*b)
}
