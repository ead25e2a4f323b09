package admission

import (
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

func TestPodRegions(t *testing.T) {
	t.Parallel()
	req := func(op corev1.NodeSelectorOperator, key string, vals ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vals}
	}
	terms := func(ts ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts}}}
	}
	exprs := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	gpu := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	nodes := []*corev1.Node{
		node("we-1", map[string]string{hold.RegionLabel: "westeurope", "disk": "ssd", "cores": "8"}),
		node("we-2", map[string]string{hold.RegionLabel: "westeurope", "disk": "hdd", "cores": "64"}),
		node("se-1", map[string]string{hold.RegionLabel: "swedencentral", "disk": "ssd", "cores": "16"}),
		node("pl-1", map[string]string{hold.RegionLabel: "polandcentral", "cores": "32"}, gpu),
		node("pl-2", map[string]string{hold.RegionLabel: "polandcentral", "cores": "4"},
			corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}, corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoExecute}),
		node("unlabelled", map[string]string{"disk": "ssd"}),
		node("se-2", map[string]string{hold.RegionLabel: "swedencentral"}, // only conditions: still a candidate
			corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}),
	}
	in, notIn := corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn
	for _, tc := range []struct {
		name string
		ps   corev1.PodSpec
		want []string
	}{
		{"nothing: untainted regions", corev1.PodSpec{}, []string{"westeurope", "swedencentral"}},
		{"tolerating the gpu taint", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}}, []string{"westeurope", "swedencentral", "polandcentral"}},
		{"tolerating another value", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "gpu", Value: "false"}}}, []string{"westeurope", "swedencentral"}},
		{"region selector", corev1.PodSpec{NodeSelector: map[string]string{hold.RegionLabel: "swedencentral"}}, []string{"swedencentral"}},
		{"hostname selector", corev1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}, []string{"westeurope"}},
		{"NotIn", corev1.PodSpec{Affinity: terms(exprs(req(notIn, hold.RegionLabel, "swedencentral")))}, []string{"westeurope"}},
		{"In, ANDed in a term", corev1.PodSpec{Affinity: terms(exprs(req(in, hold.RegionLabel, "westeurope", "swedencentral"), req(in, "disk", "ssd")))}, []string{"westeurope", "swedencentral"}},
		{"other label only", corev1.PodSpec{Affinity: terms(exprs(req(in, "disk", "hdd")))}, []string{"westeurope"}},
		{"Exists, DoesNotExist", corev1.PodSpec{Affinity: terms(exprs(req(corev1.NodeSelectorOpDoesNotExist, "disk")), exprs(req(corev1.NodeSelectorOpExists, "nothing")))}, []string{"swedencentral"}}, // se-2
		{"Gt", corev1.PodSpec{Affinity: terms(exprs(req(corev1.NodeSelectorOpGt, "cores", "10")))}, []string{"westeurope", "swedencentral"}},
		{"Lt", corev1.PodSpec{Affinity: terms(exprs(req(corev1.NodeSelectorOpLt, "cores", "10")))}, []string{"westeurope"}},
		{"ORed terms", corev1.PodSpec{Affinity: terms(exprs(req(in, "disk", "nvme")), exprs(req(in, hold.RegionLabel, "swedencentral")))}, []string{"swedencentral"}},
		{"matchFields", corev1.PodSpec{Affinity: terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req(in, "metadata.name", "se-1")}})}, []string{"swedencentral"}},
		{"a node with condition taints only", corev1.PodSpec{Affinity: terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req(in, "metadata.name", "se-2")}})}, []string{"swedencentral"}},
		{"selector and affinity", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}, Affinity: terms(exprs(req(notIn, hold.RegionLabel, "westeurope")))}, []string{"swedencentral"}},
		{"an invalid term matches nothing", corev1.PodSpec{Affinity: terms(exprs(req(corev1.NodeSelectorOpGt, "cores", "many")))}, nil},
	} {
		got, labelled := podRegions(nodes, &tc.ps)
		if !slices.Equal(got, tc.want) || !labelled {
			t.Errorf("%s: %v (labelled %v), want %v", tc.name, got, labelled, tc.want)
		}
	}
	if got, labelled := podRegions(nodes[5:6], &corev1.PodSpec{}); got != nil || labelled {
		t.Errorf("no labelled node: %v %v, want none and unlabelled", got, labelled)
	}
}

// TestHoldPodWhereItMayRun: the pod is pinned only to a region its own
// constraints admit, or left unpinned and unheld.
func TestHoldPodWhereItMayRun(t *testing.T) {
	t.Parallel()
	// SE ranks first: a pin that ignored the pod's constraints would choose it.
	fs := &fakeScheduler{ranking: []forecast.Zone{"SE", "NL", "DE"}}
	cl := fakeCluster{ns: optedIn(), nodes: []*corev1.Node{
		node("we-1", map[string]string{hold.RegionLabel: "westeurope", "kubernetes.io/hostname": "we-1"}),
		node("se-1", map[string]string{hold.RegionLabel: "unmeasured", "kubernetes.io/hostname": "se-1"}),
		node("de-1", map[string]string{hold.RegionLabel: "germanyn", "kubernetes.io/hostname": "de-1"}),
	}}
	w := workloadHook(t, fs, cl, "")
	pod := func(ps corev1.PodSpec) *corev1.Pod {
		ps.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "batch"}, Spec: ps}
	}
	notSE := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"unmeasured"}}}}}}}}
	for _, tc := range []struct {
		name string
		ps   corev1.PodSpec
		want string // region; "": unheld
	}{
		{"NotIn the best region", corev1.PodSpec{Affinity: notSE}, "westeurope"},
		{"on a node of westeurope", corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": "we-1"}}, "westeurope"},
		{"on no node", corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": "gone"}}, ""},
	} {
		var got corev1.Pod
		r := admitInto(t, w, workloadRequest(t, admissionv1.Create, pod(tc.ps), nil), &got)
		d, _ := hold.Parse(got.Annotations)
		if !r.Allowed || d.Region != tc.want {
			t.Errorf("%s: allowed %v, region %q (annotations %v), want %q", tc.name, r.Allowed, d.Region, got.Annotations, tc.want)
		}
		if tc.want != "" {
			continue
		}
		if len(got.Spec.SchedulingGates) != 0 || got.Spec.Affinity != nil || !strings.Contains(got.Annotations[AnnotationUnscheduled], "admit no node") {
			t.Errorf("%s: gates %v affinity %+v annotations %v, want unheld, unpinned, with why", tc.name, got.Spec.SchedulingGates, got.Spec.Affinity, got.Annotations)
		}
	}
}
