package kserve_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/models/workflow"
)

// splitDocs splits multi-document YAML on "---" lines.
func splitDocs(tb testing.TB, b []byte) [][]byte {
	tb.Helper()
	var docs [][]byte
	for _, d := range bytes.Split(b, []byte("---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func render(tb testing.TB, cfg kserve.RenderConfig) [][]byte {
	tb.Helper()
	b, err := kserve.Render(cfg)
	if err != nil {
		tb.Fatalf("Render: %v", err)
	}
	return splitDocs(tb, b)
}

func TestRenderRoundTrip(t *testing.T) {
	t.Parallel()
	minR := int32(0)
	docs := render(t, kserve.RenderConfig{
		Zones:       []forecast.Zone{"DE", "us-cal-ciso"},
		StorageURI:  "s3://models/carbongate/",
		Signal:      forecast.SignalDirect,
		Namespace:   "carbon",
		Image:       "registry.example/carbonserve:test",
		MinReplicas: &minR,
		MaxReplicas: 3,
	})
	if got, want := len(docs), 4; got != want {
		t.Fatalf("documents=%d, want %d", got, want)
	}

	// Every document parses as a generic map with the KServe apiVersion and kind.
	wantKinds := []struct{ apiVersion, kind string }{
		{"serving.kserve.io/v1alpha1", "ServingRuntime"},
		{"serving.kserve.io/v1beta1", "InferenceService"},
		{"serving.kserve.io/v1beta1", "InferenceService"},
		{"serving.kserve.io/v1beta1", "InferenceService"},
	}
	for i, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal(d, &m); err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		if got, want := m["apiVersion"], wantKinds[i].apiVersion; got != want {
			t.Errorf("doc %d apiVersion=%v, want %v", i, got, want)
		}
		if got, want := m["kind"], wantKinds[i].kind; got != want {
			t.Errorf("doc %d kind=%v, want %v", i, got, want)
		}
		if _, ok := m["status"]; ok {
			t.Errorf("doc %d carries a status", i)
		}
	}

	var rt kserve.ServingRuntime
	if err := yaml.UnmarshalStrict(docs[0], &rt); err != nil {
		t.Fatalf("strict decode ServingRuntime: %v", err)
	}
	if got, want := rt.Name, kserve.DefaultRuntimeName; got != want {
		t.Errorf("runtime name=%q, want %q", got, want)
	}
	if got, want := rt.Namespace, "carbon"; got != want {
		t.Errorf("runtime namespace=%q, want %q", got, want)
	}
	if got := rt.Spec.SupportedModelFormats; len(got) != 1 || got[0].Name != "carbongate" {
		t.Errorf("supportedModelFormats=%+v, want one named carbongate", got)
	}
	if got := rt.Spec.ProtocolVersions; len(got) != 1 || got[0] != "v2" {
		t.Errorf("protocolVersions=%v, want [v2]", got)
	}
	if got, want := len(rt.Spec.Containers), 1; got != want {
		t.Fatalf("containers=%d, want %d", got, want)
	}
	ctr := rt.Spec.Containers[0]
	if got, want := ctr.Name, "kserve-container"; got != want {
		t.Errorf("container name=%q, want %q", got, want)
	}
	if got, want := ctr.Image, "registry.example/carbonserve:test"; got != want {
		t.Errorf("image=%q, want %q", got, want)
	}
	if got, want := strings.Join(ctr.Args, " "), "--model_name={{.Name}} --model_dir=/mnt/models --http_port=8080 --grpc_port=8081"; got != want {
		t.Errorf("args=%q, want %q", got, want)
	}
	if p := ctr.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/v2/health/ready" || p.HTTPGet.Port.IntValue() != 8080 {
		t.Errorf("readiness probe %+v, want GET /v2/health/ready on 8080", p)
	}
	wantPorts := []corev1.ContainerPort{
		{Name: "http1", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		{Name: "h2c", ContainerPort: 8081, Protocol: corev1.ProtocolTCP},
	}
	if got := ctr.Ports; len(got) != len(wantPorts) || got[0] != wantPorts[0] || got[1] != wantPorts[1] {
		t.Errorf("ports=%+v, want %+v", got, wantPorts)
	}

	tests := []struct {
		name, label, storage string
	}{
		{"carbon-forecaster-de", "DE", "s3://models/carbongate/direct/DE"},
		{"carbon-forecaster-us-cal-ciso", "US-CAL-CISO", "s3://models/carbongate/direct/US-CAL-CISO"},
		{"carbon-forecaster-generic", "generic", "s3://models/carbongate/direct/generic"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var isvc kserve.InferenceService
			if err := yaml.UnmarshalStrict(docs[i+1], &isvc); err != nil {
				t.Fatalf("strict decode InferenceService: %v", err)
			}
			if got, want := isvc.Name, tt.name; got != want {
				t.Errorf("name=%q, want %q", got, want)
			}
			if got, want := isvc.Namespace, "carbon"; got != want {
				t.Errorf("namespace=%q, want %q", got, want)
			}
			if got, want := isvc.Labels[kserve.LabelZone], tt.label; got != want {
				t.Errorf("zone label=%q, want %q", got, want)
			}
			if got, want := isvc.Labels[kserve.LabelSignal], "direct"; got != want {
				t.Errorf("signal label=%q, want %q", got, want)
			}
			if got, want := isvc.Annotations["serving.kserve.io/deploymentMode"], "Standard"; got != want {
				t.Errorf("deploymentMode=%q, want %q", got, want)
			}
			p := isvc.Spec.Predictor
			if p.MinReplicas == nil || *p.MinReplicas != 0 {
				t.Errorf("minReplicas=%v, want 0", p.MinReplicas)
			}
			if got, want := p.MaxReplicas, int32(3); got != want {
				t.Errorf("maxReplicas=%d, want %d", got, want)
			}
			m := p.Model
			if m == nil {
				t.Fatal("predictor.model missing")
			}
			if got, want := m.ModelFormat.Name, "carbongate"; got != want {
				t.Errorf("modelFormat=%q, want %q", got, want)
			}
			if m.Runtime == nil || *m.Runtime != kserve.DefaultRuntimeName {
				t.Errorf("runtime=%v, want %q", m.Runtime, kserve.DefaultRuntimeName)
			}
			if m.ProtocolVersion == nil || *m.ProtocolVersion != "v2" {
				t.Errorf("protocolVersion=%v, want v2", m.ProtocolVersion)
			}
			if m.StorageURI == nil || *m.StorageURI != tt.storage {
				t.Errorf("storageUri=%v, want %q", m.StorageURI, tt.storage)
			}
			if got, want := m.Resources.Requests.Cpu().String(), "100m"; got != want {
				t.Errorf("cpu request=%s, want %s", got, want)
			}
			if got, want := m.Resources.Limits.Memory().String(), "1Gi"; got != want {
				t.Errorf("memory limit=%s, want %s", got, want)
			}
		})
	}
}

func TestRenderOptions(t *testing.T) {
	t.Parallel()
	t.Run("cluster runtime, knative, defaults", func(t *testing.T) {
		docs := render(t, kserve.RenderConfig{
			Zones: []forecast.Zone{"SE"}, StorageURI: "gs://bucket",
			ClusterRuntime: true, DeploymentMode: kserve.DeploymentModeKnative, NoGeneric: true,
			Resources: &kserve.Resources{RequestsMemory: "128Mi"},
		})
		if got, want := len(docs), 2; got != want {
			t.Fatalf("documents=%d, want %d", got, want)
		}
		var rt kserve.ClusterServingRuntime
		if err := yaml.UnmarshalStrict(docs[0], &rt); err != nil {
			t.Fatalf("strict decode ClusterServingRuntime: %v", err)
		}
		if got, want := rt.Kind, "ClusterServingRuntime"; got != want {
			t.Errorf("kind=%q, want %q", got, want)
		}
		if rt.Namespace != "" {
			t.Errorf("cluster runtime has namespace %q", rt.Namespace)
		}
		if got, want := rt.Spec.Containers[0].Image, kserve.DefaultImage; got != want {
			t.Errorf("image=%q, want %q", got, want)
		}
		if got := rt.Spec.Containers[0].Ports; len(got) != 1 || got[0].ContainerPort != 8080 {
			t.Errorf("knative ports=%+v, want only 8080", got)
		}
		var isvc kserve.InferenceService
		if err := yaml.UnmarshalStrict(docs[1], &isvc); err != nil {
			t.Fatalf("strict decode InferenceService: %v", err)
		}
		if got, want := *isvc.Spec.Predictor.Model.StorageURI, "gs://bucket/lifecycle/SE"; got != want {
			t.Errorf("storageUri=%q, want %q", got, want)
		}
		if isvc.Spec.Predictor.MinReplicas != nil || isvc.Spec.Predictor.MaxReplicas != 0 {
			t.Errorf("replicas set without options: %v/%d", isvc.Spec.Predictor.MinReplicas, isvc.Spec.Predictor.MaxReplicas)
		}
		if isvc.Namespace != "" {
			t.Errorf("namespace=%q, want none", isvc.Namespace)
		}
		if got := isvc.Spec.Predictor.Model.Resources; len(got.Limits) != 0 || got.Requests.Memory().String() != "128Mi" {
			t.Errorf("resources=%+v, want only memory request 128Mi", got)
		}
	})
	t.Run("pvc", func(t *testing.T) {
		docs := render(t, kserve.RenderConfig{Zones: []forecast.Zone{"FR"}, StorageURI: "pvc://models-claim/trained"})
		var isvc kserve.InferenceService
		if err := yaml.UnmarshalStrict(docs[1], &isvc); err != nil {
			t.Fatal(err)
		}
		if got, want := *isvc.Spec.Predictor.Model.StorageURI, "pvc://models-claim/trained/lifecycle/FR"; got != want {
			t.Errorf("storageUri=%q, want %q", got, want)
		}
	})
}

func TestRenderInvalid(t *testing.T) {
	t.Parallel()
	ok := kserve.RenderConfig{Zones: []forecast.Zone{"DE"}, StorageURI: "s3://b/p"}
	one, two := int32(1), int32(2)
	tests := []struct {
		note  string
		edit  func(*kserve.RenderConfig)
		field string
	}{
		{"no zones", func(c *kserve.RenderConfig) { c.Zones = nil }, "zones"},
		{"bad zone", func(c *kserve.RenderConfig) { c.Zones = []forecast.Zone{"DE", "D E"} }, "zones"},
		{"duplicate zone", func(c *kserve.RenderConfig) { c.Zones = []forecast.Zone{"DE", "de"} }, "zones"},
		{"reserved zone", func(c *kserve.RenderConfig) { c.Zones = []forecast.Zone{"GENERIC"} }, "zones"},
		{"zone name too long", func(c *kserve.RenderConfig) { c.Zones = []forecast.Zone{forecast.Zone(strings.Repeat("A", 50))} }, "zones"},
		{"zone ends with dash", func(c *kserve.RenderConfig) { c.Zones = []forecast.Zone{"DE-"} }, "zones"},
		{"no storage", func(c *kserve.RenderConfig) { c.StorageURI = "" }, "storage_uri"},
		{"http storage", func(c *kserve.RenderConfig) { c.StorageURI = "https://example.com/models" }, "storage_uri"},
		{"local path", func(c *kserve.RenderConfig) { c.StorageURI = "/models" }, "storage_uri"},
		{"s3 without bucket", func(c *kserve.RenderConfig) { c.StorageURI = "s3:///prefix" }, "storage_uri"},
		{"bad signal", func(c *kserve.RenderConfig) { c.Signal = "marginal" }, "signal"},
		{"bad namespace", func(c *kserve.RenderConfig) { c.Namespace = "Carbon_NS" }, "namespace"},
		{"bad prefix", func(c *kserve.RenderConfig) { c.NamePrefix = "1carbon" }, "name_prefix"},
		{"bad runtime", func(c *kserve.RenderConfig) { c.RuntimeName = "Carbon Serve" }, "runtime_name"},
		{"bad image", func(c *kserve.RenderConfig) { c.Image = "a b" }, "image"},
		{"bad mode", func(c *kserve.RenderConfig) { c.DeploymentMode = "ModelMesh" }, "deployment_mode"},
		{"negative min", func(c *kserve.RenderConfig) { m := int32(-1); c.MinReplicas = &m }, "min_replicas"},
		{"max below min", func(c *kserve.RenderConfig) { c.MinReplicas = &two; c.MaxReplicas = one }, "max_replicas"},
		{"bad quantity", func(c *kserve.RenderConfig) { c.Resources = &kserve.Resources{LimitsCPU: "lots"} }, "resources.limits.cpu"},
		{"limit below request", func(c *kserve.RenderConfig) {
			c.Resources = &kserve.Resources{RequestsMemory: "1Gi", LimitsMemory: "512Mi"}
		}, "resources.limits.memory"},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			cfg := ok
			tt.edit(&cfg)
			_, err := kserve.Render(cfg)
			if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
			if got, want := forecast.ErrorField(err), tt.field; got != want {
				t.Errorf("field=%q (%v), want %q", got, err, want)
			}
		})
	}
}

func ExampleServiceName() {
	fmt.Println(kserve.ServiceName("", "US-CAL-CISO"))
	fmt.Println(kserve.ServiceName("", ""))
	// Output:
	// carbon-forecaster-us-cal-ciso
	// carbon-forecaster-generic
}

// The storage layout must match what carbonctl train writes.
func TestGenericDirMatchesTrain(t *testing.T) {
	t.Parallel()
	if got, want := kserve.GenericDir, workflow.GenericDir; got != want {
		t.Errorf("GenericDir=%q, want workflow.GenericDir %q", got, want)
	}
}
