//go:build interop

package helm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/test/services"
)

// TestKServeMatchesRender checks that the chart's ServingRuntime and
// InferenceServices are the objects `carbonctl deploy render` writes for
// the same settings (gateway/kserve.Objects): the same specs, names,
// namespaces and annotations, and its labels among the chart's (which adds
// Helm's). The first case is deploy/kserve/example.yaml itself.
func TestKServeMatchesRender(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "kserve", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exampleDocs, err := splitDocs(string(example))
	if err != nil {
		t.Fatalf("deploy/kserve/example.yaml: %v", err)
	}
	zero := int32(0)
	for _, c := range []struct {
		name   string
		values string
		want   func(t *testing.T) []any // the objects the chart must match
	}{
		{
			name: "deploy/kserve/example.yaml",
			values: `
kserve:
  namespace: carbon
  models: {enabled: true, zones: [DE, SE, US-CAL-CISO], storageUri: "s3://carbongate-models"}`,
			want: func(t *testing.T) []any { return decodeAll(t, exampleDocs).kserveObjects() },
		},
		{
			name: "Knative, direct, no generic",
			values: `
kserve:
  models:
    enabled: true
    zones: [us-cal-ciso, FR]
    generic: false
    storageUri: gs://bucket/models/
    signal: direct
    namePrefix: cf
    deploymentMode: Knative
    minReplicas: 0
    maxReplicas: 3
    runtime: {name: carbonserve-direct, image: "registry.example.com/carbonserve:v9"}
    # null removes a default; render leaves out what is not given.
    resources: {requests: {cpu: 200m, memory: null}, limits: {cpu: null, memory: 2Gi}}`,
			want: func(t *testing.T) []any {
				return renderKServe(t, kserve.RenderConfig{
					Zones: []forecast.Zone{"us-cal-ciso", "FR"}, StorageURI: "gs://bucket/models/", Signal: forecast.SignalDirect,
					Namespace: "carbon", Image: "registry.example.com/carbonserve:v9", RuntimeName: "carbonserve-direct",
					NamePrefix: "cf", NoGeneric: true, DeploymentMode: kserve.DeploymentModeKnative,
					MinReplicas: &zero, MaxReplicas: 3, Resources: &kserve.Resources{RequestsCPU: "200m", LimitsMemory: "2Gi"},
				}).kserveObjects()
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := decodeAll(t, render(t, "carbongate", "carbon", c.values)).kserveObjects()
			want := c.want(t)
			if len(got) != len(want) {
				t.Fatalf("chart renders %d KServe objects, carbonctl deploy render %d", len(got), len(want))
			}
			for i := range want {
				compareKServe(t, got[i], want[i])
			}
		})
	}
}

// renderKServe decodes what `carbonctl deploy render` writes for cfg
// (gateway/kserve.Render, whose types are a local subset of KServe's)
// strictly into KServe's own types, as the chart's objects are.
func renderKServe(tb testing.TB, cfg kserve.RenderConfig) *Objects {
	tb.Helper()
	b, err := kserve.Render(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := splitDocs(string(b))
	if err != nil {
		tb.Fatalf("render: %v\n%s", err, b)
	}
	return decodeAll(tb, m)
}

// kserveObjects returns the ServingRuntimes, then the InferenceServices in
// the order rendered.
func (o *Objects) kserveObjects() []any {
	var out []any
	for _, r := range o.Runtimes {
		out = append(out, r)
	}
	for _, s := range o.InferenceSvcs {
		out = append(out, s)
	}
	return out
}

// compareKServe compares one chart object with render's.
func compareKServe(t *testing.T, got, want any) {
	t.Helper()
	var gm, wm metav1.ObjectMeta
	var gs, ws any
	switch w := want.(type) {
	case *v1alpha1.ServingRuntime:
		g, ok := got.(*v1alpha1.ServingRuntime)
		if !ok {
			t.Fatalf("chart has %T where render has a ServingRuntime", got)
		}
		gm, wm, gs, ws = g.ObjectMeta, w.ObjectMeta, g.Spec, w.Spec
	case *v1beta1.InferenceService:
		g, ok := got.(*v1beta1.InferenceService)
		if !ok {
			t.Fatalf("chart has %T where render has an InferenceService", got)
		}
		gm, wm, gs, ws = g.ObjectMeta, w.ObjectMeta, g.Spec, w.Spec
		if errs := validation.IsDNS1035Label(g.Name); len(errs) > 0 {
			t.Errorf("InferenceService %s: %v", g.Name, errs)
		}
	default:
		t.Fatalf("unexpected %T", want)
	}
	if gm.Name != wm.Name || gm.Namespace != wm.Namespace || !equality.Semantic.DeepEqual(gm.Annotations, wm.Annotations) {
		t.Errorf("%s/%s %v: chart metadata differs from render's %s/%s %v", gm.Namespace, gm.Name, gm.Annotations, wm.Namespace, wm.Name, wm.Annotations)
	}
	for k, v := range wm.Labels {
		if gm.Labels[k] != v {
			t.Errorf("%s: label %s = %q, render writes %q", gm.Name, k, gm.Labels[k], v)
		}
	}
	if !equality.Semantic.DeepEqual(gs, ws) {
		gy, _ := yaml.Marshal(gs)
		wy, _ := yaml.Marshal(ws)
		t.Errorf("%s: spec differs from carbonctl deploy render's:\n--- chart\n%s--- render\n%s", gm.Name, gy, wy)
	}
}
