//go:build interop

package cluster

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/test/kservemanager"
	"github.com/carbongate/carbongate/test/services"
)

const (
	kserveNS      = "carbon"
	modelsPVC     = "models"
	podMutator    = "carbongate-test-kserve-pods"
	isvcPodLabel  = "serving.kserve.io/inferenceservice"
	clusterDomain = "svc." + dnsDomain
)

var isvcResource = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}

// kserveZones are the zones whose InferenceServices run on the nodes.
var kserveZones = []string{"DE", "SE"}

// testKServe runs KServe's own controller against the cluster and applies
// what `carbonctl deploy render --storage-uri pvc://models/carbon` (bin's
// carbonctl) writes for kserveZones: the models `carbonctl train` wrote sit on a hostPath
// PersistentVolume bound to PVC models, KServe's pod webhook (registered by
// URL) mounts its subpath <signal>/<ZONE> at /mnt/models, and the predictor
// pods run carbonserve's image on the real nodes. carbongate, the chart's
// pod in the same namespace with KServe discovery on, discovers them,
// reaches them by their in-cluster names through the cluster's DNS and
// forecasts each zone with its model (source zone).
func testKServe(t *testing.T, c *Cluster, bin, serveImage string) {
	start := time.Now()
	if out, err := c.Kubectl(context.Background(), "create", "namespace", kserveNS); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// First, so that the claim is bound when the predictor pods come.
	modelsPV(t, c, bin)
	m := kservemanager.Start(t, c.Config, kservemanager.Dir(t), kservemanager.Options{
		Kubeconfig: c.Kubeconfig,
		// No ingress and no Istio: the predictor's URL is its Service's
		// in-cluster name.
		Config: map[string]map[string]any{"ingress": {"ingressDomain": clusterDomain,
			"domainTemplate": "{{ .Name }}.{{ .Namespace }}.{{ .IngressDomain }}", "disableIngressCreation": true}},
	})
	registerPodMutator(t, c, m)
	t.Logf("figures: models trained, KServe's CRDs, manager and pod webhook up in %v", time.Since(start).Round(100*time.Millisecond))

	names := applyPredictors(t, c, bin, serveImage)
	gateStart := time.Now()
	// --upstream-timeout: this test is about where the forecasts come
	// from, not how fast; on a loaded 2-core host a first call to a cold
	// predictor can take longer than the default 800 ms, and a zone that
	// falls back keeps its fallback for the cache's retry interval (1 min).
	gate := startClusterGate(t, c, "--route-refresh=500ms", "--upstream-timeout=5s")
	var first []string // the answers before the zone's model, if any
	for i, z := range kserveZones {
		Eventually(t, 90*time.Second, z+" forecast by its predictor", func(ctx context.Context) error {
			p, err := forecastSource(ctx, gate, z)
			if err != nil {
				return err
			}
			if p.Source != "zone" || p.Model != names[i] {
				err := fmt.Errorf("%s forecast by %q (%s, reason %q), want %s (zone)", z, p.Model, p.Source, p.Reason, names[i])
				if len(first) < len(kserveZones) {
					first = append(first, err.Error())
				}
				return err
			}
			return nil
		})
		// The answer came from the zone's pod: its carbonserve counted it.
		n, err := inferCalls(context.Background(), c, names[i]+"-predictor", names[i])
		if err != nil || n == 0 {
			t.Errorf("%s's predictor counted %v infer calls (%v), want some", names[i], n, err)
		}
		t.Logf("%s forecast by %s at %s", z, names[i], inClusterURL(t, c, names[i]))
	}
	if took := time.Since(gateStart); took > 20*time.Second {
		t.Logf("the zones were forecast by their pods only %v after carbongate started; first answers %q; its warnings:\n%s",
			took.Round(time.Second), first, warnings(gateLog(c)))
	}
	t.Logf("figures: carbongate started -> %v forecast by their pods (source zone) in %v; the whole KServe test %v",
		kserveZones, time.Since(gateStart).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// applyPredictors applies `carbonctl deploy render` for kserveZones with
// carbonserve's image serveImage and the models' claim as storage, waits
// until each InferenceService is Ready with its predictor pod Ready on a
// real node and returns their names. At cleanup it deletes them.
func applyPredictors(t *testing.T, c *Cluster, bin, serveImage string) []string {
	t.Helper()
	manifest := render(t, bin, "--zones", strings.Join(kserveZones, ","), "--no-generic",
		"--storage-uri", "pvc://"+modelsPVC+"/carbon", "--image", serveImage, "--namespace", kserveNS)
	waitDefaultSA(t, c, kserveNS)
	bindStart := time.Now()
	Eventually(t, time.Minute, "PVC "+modelsPVC+" Bound", func(ctx context.Context) error {
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(kserveNS).Get(ctx, modelsPVC, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("phase %s", pvc.Status.Phase)
		}
		return nil
	})
	applied := time.Now()
	t.Logf("figures: claim %s Bound %v after the predictors' set-up", modelsPVC, applied.Sub(bindStart).Round(100*time.Millisecond))
	if out, err := c.Kubectl(context.Background(), "apply", "--server-side", "-f", manifest); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() { deleteInferenceServices(t, c) })
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.Kubectl(context.Background(), "logs", "-n", kserveNS, "-l", isvcPodLabel, "--all-containers", "--prefix", "--tail=20")
			t.Logf("predictor pods' logs:\n%s", out)
		}
	})
	isvcs := dynamicClient(t, c).Resource(isvcResource).Namespace(kserveNS)
	var names []string
	for _, z := range kserveZones {
		name := "carbon-forecaster-" + strings.ToLower(z)
		names = append(names, name)
		Eventually(t, 3*time.Minute, name+" Ready with its predictor pod", func(ctx context.Context) error {
			return predictorReady(ctx, c, isvcs, name)
		})
	}
	t.Logf("figures: %d InferenceServices applied -> Ready in %v; %s", len(names), time.Since(applied).Round(100*time.Millisecond),
		strings.Join(predictorTimes(t, c, isvcs, names), "; "))
	// A Ready pod is not yet a Service that answers: its endpoints reach
	// kube-proxy's rules a moment later, and until then a connection to
	// the ClusterIP is refused (carbongate's warm-up would fall back and
	// keep the fallback for the cache's retry interval, 1 min).
	ready := time.Now()
	for _, name := range names {
		Eventually(t, time.Minute, name+" ready through its Service", func(ctx context.Context) error {
			base, err := serviceURL(ctx, c, name+"-predictor")
			if err != nil {
				return err
			}
			_, err = httpDo(ctx, http.MethodGet, base+"/v2/models/"+name+"/ready", nil)
			return err
		})
	}
	t.Logf("figures: the models ready through their Services %v after the InferenceServices were Ready", time.Since(ready).Round(100*time.Millisecond))
	return names
}

// warnings returns a JSON log's lines at level WARN or ERROR.
func warnings(log string) string {
	var b strings.Builder
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// render runs carbonctl deploy render with args and returns the file
// holding its output.
func render(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "carbonctl"), append([]string{"deploy", "render"}, args...)...).Output()
	if err != nil {
		t.Fatalf("carbonctl deploy render %v: %v", args, err)
	}
	p := filepath.Join(t.TempDir(), "kserve.yaml")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// modelsPV trains the lifecycle models of kserveZones into the cluster's
// state directory (readable by the predictors' non-root user) and offers
// them as PersistentVolume carbongate-test-models (hostPath: both real
// nodes share this host's file system), bound to PVC models in kserveNS.
func modelsPV(t *testing.T, c *Cluster, bin string) {
	t.Helper()
	dir := c.dir("kserve-models")
	services.Run(t, filepath.Join(bin, "carbonctl"), "train", "--data", "bundled", "--until", "2021-01-01T00:00:00Z",
		"--signal", "lifecycle", "--zones", strings.Join(kserveZones, ","), "--out", filepath.Join(dir, "carbon"))
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		t.Fatal(err)
	}
	hostPath := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "carbongate-test-models"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
		ClaimRef:               &corev1.ObjectReference{Namespace: kserveNS, Name: modelsPVC},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostPath}},
		StorageClassName:       "", PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain}}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: modelsPVC, Namespace: kserveNS}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany}, StorageClassName: &empty, VolumeName: pv.Name,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	ctx := context.Background()
	if _, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	// A claim the controller sees before its volume waits for the next
	// periodic sync (15 s) to be bound; the volume Available means the
	// controller has it.
	Eventually(t, time.Minute, "PV "+pv.Name+" Available", func(ctx context.Context) error {
		v, err := c.Kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v.Status.Phase != corev1.VolumeAvailable {
			return fmt.Errorf("phase %q", v.Status.Phase)
		}
		return nil
	})
	if _, err := c.Kube.CoreV1().PersistentVolumeClaims(kserveNS).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// registerPodMutator registers KServe's pod webhook (as KServe's own
// manifests do, but by URL: the manager runs on the host) until cleanup.
// It is what mounts a pvc:// storageUri into the predictor pods.
func registerPodMutator(t *testing.T, c *Cluster, m *kservemanager.Manager) {
	t.Helper()
	url := m.WebhookURL + "/mutate-pods"
	fail, none, ifNeeded := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.IfNeededReinvocationPolicy
	timeout := int32(10)
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: podMutator},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "inferenceservice.kserve-webhook-server.pod-mutator",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: m.WebhookCA},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: isvcPodLabel, Operator: metav1.LabelSelectorOpExists}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			ReinvocationPolicy:      &ifNeeded,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
		}}}
	whs := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := whs.Create(context.Background(), mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = whs.Delete(context.Background(), podMutator, metav1.DeleteOptions{}) })
}

// predictorReady checks InferenceService name is Ready and its predictor
// pod Ready on a real node with the models mounted from the PVC.
func predictorReady(ctx context.Context, c *Cluster, isvcs dynamic.ResourceInterface, name string) error {
	u, err := isvcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var isvc kserve.InferenceService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &isvc); err != nil {
		return err
	}
	if !isvc.Status.IsConditionTrue(kserve.ConditionReady) {
		return fmt.Errorf("not Ready: %+v", isvc.Status.Conditions)
	}
	pod, err := predictorPod(ctx, c, name)
	if err != nil {
		return err
	}
	if !slices.Contains(c.Nodes, pod.Spec.NodeName) {
		return fmt.Errorf("pod %s on %q, not a real node", pod.Name, pod.Spec.NodeName)
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == modelsPVC {
			return nil
		}
	}
	return fmt.Errorf("pod %s mounts no PVC %s: volumes %v", pod.Name, modelsPVC, pod.Spec.Volumes)
}

// predictorPod returns the Ready pod of InferenceService name.
func predictorPod(ctx context.Context, c *Cluster, name string) (*corev1.Pod, error) {
	pods, err := c.Kube.CoreV1().Pods(kserveNS).List(ctx, metav1.ListOptions{LabelSelector: isvcPodLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; podReady(p) && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no Ready pod of %s among %d", name, len(pods.Items))
}

// predictorTimes reports, for each InferenceService, how long from its
// creation to its predictor pod's creation, and from then to the pod
// scheduled and Ready (the API server's timestamps, in seconds), and the
// node.
func predictorTimes(t *testing.T, c *Cluster, isvcs dynamic.ResourceInterface, names []string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, name := range names {
		u, err := isvcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod, err := predictorPod(ctx, c, name)
		if err != nil {
			t.Fatal(err)
		}
		at := map[corev1.PodConditionType]time.Time{}
		for _, cond := range pod.Status.Conditions {
			at[cond.Type] = cond.LastTransitionTime.Time
		}
		created := pod.CreationTimestamp.Time
		out = append(out, fmt.Sprintf("%s: pod created %v after it, scheduled +%v, Ready +%v on %s", name,
			created.Sub(u.GetCreationTimestamp().Time), at[corev1.PodScheduled].Sub(created), at[corev1.PodReady].Sub(created), pod.Spec.NodeName))
	}
	return out
}

// deleteInferenceServices deletes kserveNS's InferenceServices and waits
// until their pods are gone, while the kubelets and KServe's manager
// still run.
func deleteInferenceServices(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := c.Kubectl(ctx, "delete", "inferenceservices", "--all", "-n", kserveNS, "--wait=true", "--timeout=60s"); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "delete", "pods", "--all", "-n", kserveNS, "--grace-period=1", "--wait=true", "--timeout=60s"); err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

func dynamicClient(t *testing.T, c *Cluster) *dynamic.DynamicClient {
	t.Helper()
	d, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
