//go:build interop

package helm

import (
	"encoding/json"
	"testing"

	"github.com/kserve/kserve/pkg/apis/serving/v1alpha1"
	"github.com/kserve/kserve/pkg/apis/serving/v1beta1"
	"github.com/kserve/kserve/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/kserve"
)

// TestKServeLocalTypes checks gateway/kserve's local subset of KServe's API
// types against KServe's own: the API groups and constants are KServe's,
// what Render writes decodes strictly into KServe's types without losing a
// value (TestKServeMatchesRender covers the namespaced runtime and the
// InferenceServices; the cluster-scoped runtime here), and the status KServe
// reports decodes into the local status to the same readiness and URLs.
func TestKServeLocalTypes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, got, want string }{
		{"serving/v1alpha1", kserve.V1alpha1.String(), v1alpha1.SchemeGroupVersion.String()},
		{"serving/v1beta1", kserve.V1beta1.String(), v1beta1.SchemeGroupVersion.String()},
		{"ProtocolV2", kserve.ProtocolV2, string(constants.ProtocolV2)},
		{"InferenceServiceContainerName", kserve.InferenceServiceContainerName, constants.InferenceServiceContainerName},
		{"DefaultModelLocalMountPath", kserve.DefaultModelLocalMountPath, constants.DefaultModelLocalMountPath},
		{"DeploymentMode", kserve.DeploymentModeAnnotation, constants.DeploymentMode},
		{"ConditionReady", kserve.ConditionReady, string(apis.ConditionReady)},
		{"PredictorReady", kserve.ConditionPredictorReady, string(v1beta1.PredictorReady)},
		{"PredictorComponent", kserve.PredictorComponent, string(v1beta1.PredictorComponent)},
		{"Standard mode", kserve.DefaultDeploymentMode, string(constants.Standard)},
		{"Knative mode", kserve.DeploymentModeKnative, string(constants.Knative)},
	} {
		if c.got != c.want {
			t.Errorf("%s: gateway/kserve has %q, KServe %q", c.name, c.got, c.want)
		}
	}

	t.Run("ClusterServingRuntime", func(t *testing.T) {
		b, err := kserve.Render(kserve.RenderConfig{Zones: []forecast.Zone{"DE"}, StorageURI: "pvc://models", ClusterRuntime: true})
		if err != nil {
			t.Fatal(err)
		}
		m, err := splitDocs(string(b))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeStrict(m.Docs[0])
		if err != nil {
			t.Fatal(err)
		}
		rt, ok := obj.(*v1alpha1.ClusterServingRuntime)
		if !ok || rt.Name != kserve.DefaultRuntimeName || len(rt.Spec.Containers) != 1 {
			t.Errorf("first document is %T %+v, want the ClusterServingRuntime %s with one container", obj, obj, kserve.DefaultRuntimeName)
		}
	})

	t.Run("status", func(t *testing.T) {
		u := func(s string) *apis.URL {
			p, err := apis.ParseURL(s)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		for _, c := range []struct {
			name             string
			ready, predReady corev1.ConditionStatus
		}{
			{"ready", corev1.ConditionTrue, corev1.ConditionTrue},
			{"predictor not ready", corev1.ConditionTrue, corev1.ConditionFalse},
			{"not ready", corev1.ConditionFalse, corev1.ConditionTrue},
			{"unknown", corev1.ConditionUnknown, ""},
		} {
			var up v1beta1.InferenceService
			up.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: c.ready}}
			if c.predReady != "" {
				up.Status.Conditions = append(up.Status.Conditions, apis.Condition{Type: v1beta1.PredictorReady, Status: c.predReady})
			}
			up.Status.URL = u("https://isvc.carbon.example.com")
			up.Status.Components = map[v1beta1.ComponentType]v1beta1.ComponentStatusSpec{v1beta1.PredictorComponent: {
				URL:     u("http://isvc-predictor.carbon.svc"),
				RestURL: u("http://isvc-predictor.carbon.svc:8080/v2"),
				GrpcURL: u("grpc://isvc-predictor.carbon.svc:8081"),
				Address: &duckv1.Addressable{URL: u("http://isvc-predictor.carbon.svc.cluster.local")},
			}}
			j, err := json.Marshal(&up)
			if err != nil {
				t.Fatal(err)
			}
			var local kserve.InferenceService
			if err := json.Unmarshal(j, &local); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			st := &local.Status
			if got, want := st.IsConditionTrue(kserve.ConditionReady), up.Status.IsReady(); got != want {
				t.Errorf("%s: ready %v, KServe says %v", c.name, got, want)
			}
			if got, want := st.IsConditionTrue(kserve.ConditionPredictorReady), up.Status.IsConditionReady(v1beta1.PredictorReady); got != want {
				t.Errorf("%s: predictor ready %v, KServe says %v", c.name, got, want)
			}
			p, lp := up.Status.Components[v1beta1.PredictorComponent], st.Components[kserve.PredictorComponent]
			if lp.Address == nil || st.URL != up.Status.URL.String() || lp.URL != p.URL.String() || lp.RestURL != p.RestURL.String() ||
				lp.GrpcURL != p.GrpcURL.String() || lp.Address.URL != p.Address.URL.String() {
				t.Errorf("%s: status decodes to %+v, predictor %+v; want the URLs of %s", c.name, st, lp, j)
			}
		}
	})
}
