package kserve

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The KServe API this package writes and reads: the part of the
// serving.kserve.io types that Render fills in and Discovery looks at, with
// KServe's Go field names and JSON names. KServe's own API packages are not
// imported: github.com/kserve/kserve/pkg/apis/serving/v1beta1 imports
// v1alpha1, which imports KServe's storage agent and KEDA, and with them the
// AWS, GCS and Azure SDKs (most of the binaries' size) and replace
// directives that would stop `go install ...@version`. The tests in
// test/helm (a module of its own that requires kserve) decode what Render
// writes into KServe's types strictly and compare these constants with
// KServe's, so a field renamed or dropped upstream fails there.

// API groups and versions of the serving.kserve.io types used here.
var (
	V1alpha1 = schema.GroupVersion{Group: "serving.kserve.io", Version: "v1alpha1"}
	V1beta1  = schema.GroupVersion{Group: "serving.kserve.io", Version: "v1beta1"}
)

// Values of KServe's pkg/constants that the manifests use.
const (
	ProtocolV2                    = "v2"                               // constants.ProtocolV2
	InferenceServiceContainerName = "kserve-container"                 // constants.InferenceServiceContainerName
	DefaultModelLocalMountPath    = "/mnt/models"                      // constants.DefaultModelLocalMountPath
	DeploymentModeAnnotation      = "serving.kserve.io/deploymentMode" // constants.DeploymentMode
	ConditionReady                = "Ready"                            // knative apis.ConditionReady
	ConditionPredictorReady       = "PredictorReady"                   // v1beta1.PredictorReady
	PredictorComponent            = "predictor"                        // v1beta1.PredictorComponent
)

// ServingRuntime is serving.kserve.io/v1alpha1 ServingRuntime.
type ServingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServingRuntimeSpec `json:"spec,omitempty"`
}

// ClusterServingRuntime is serving.kserve.io/v1alpha1 ClusterServingRuntime.
type ClusterServingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServingRuntimeSpec `json:"spec,omitempty"`
}

// ServingRuntimeSpec is v1alpha1.ServingRuntimeSpec.
type ServingRuntimeSpec struct {
	SupportedModelFormats []SupportedModelFormat `json:"supportedModelFormats,omitempty"`
	MultiModel            *bool                  `json:"multiModel,omitempty"`
	ProtocolVersions      []string               `json:"protocolVersions,omitempty"`
	ServingRuntimePodSpec `json:",inline"`
}

// SupportedModelFormat is v1alpha1.SupportedModelFormat.
type SupportedModelFormat struct {
	Name       string `json:"name"`
	AutoSelect *bool  `json:"autoSelect,omitempty"`
	Priority   *int32 `json:"priority,omitempty"`
}

// ServingRuntimePodSpec is v1alpha1.ServingRuntimePodSpec.
type ServingRuntimePodSpec struct {
	Containers  []corev1.Container `json:"containers"`
	Annotations map[string]string  `json:"annotations,omitempty"`
}

// InferenceService is serving.kserve.io/v1beta1 InferenceService.
type InferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InferenceServiceSpec   `json:"spec,omitempty"`
	Status            InferenceServiceStatus `json:"status,omitempty"`
}

// InferenceServiceList is serving.kserve.io/v1beta1 InferenceServiceList.
type InferenceServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InferenceService `json:"items"`
}

// InferenceServiceSpec is v1beta1.InferenceServiceSpec.
type InferenceServiceSpec struct {
	Predictor PredictorSpec `json:"predictor"`
}

// PredictorSpec is v1beta1.PredictorSpec.
type PredictorSpec struct {
	Model                  *ModelSpec `json:"model,omitempty"`
	ComponentExtensionSpec `json:",inline"`
}

// ComponentExtensionSpec is v1beta1.ComponentExtensionSpec.
type ComponentExtensionSpec struct {
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	MaxReplicas int32  `json:"maxReplicas,omitempty"`
}

// ModelSpec is v1beta1.ModelSpec.
type ModelSpec struct {
	ModelFormat            ModelFormatSpec `json:"modelFormat"`
	Runtime                *string         `json:"runtime,omitempty"`
	PredictorExtensionSpec `json:",inline"`
}

// ModelFormatSpec is v1beta1.ModelFormat (ModelFormat is the constant
// carbongate's runtime declares).
type ModelFormatSpec struct {
	Name string `json:"name"`
}

// PredictorExtensionSpec is v1beta1.PredictorExtensionSpec.
type PredictorExtensionSpec struct {
	StorageURI       *string `json:"storageUri,omitempty"`
	ProtocolVersion  *string `json:"protocolVersion,omitempty"`
	corev1.Container `json:",inline"`
}

// InferenceServiceStatus is the part of v1beta1.InferenceServiceStatus that
// Discovery reads.
type InferenceServiceStatus struct {
	Conditions []Condition                `json:"conditions,omitempty"`
	URL        string                     `json:"url,omitempty"`
	Components map[string]ComponentStatus `json:"components,omitempty"`
}

// Condition is the part of a knative apis.Condition that Discovery reads.
type Condition struct {
	Type   string                 `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
}

// ComponentStatus is the part of v1beta1.ComponentStatusSpec that Discovery
// reads.
type ComponentStatus struct {
	URL     string       `json:"url,omitempty"`
	RestURL string       `json:"restUrl,omitempty"`
	GrpcURL string       `json:"grpcUrl,omitempty"`
	Address *Addressable `json:"address,omitempty"`
}

// Addressable is knative's duck v1 Addressable, its URL.
type Addressable struct {
	URL string `json:"url,omitempty"`
}

// IsConditionTrue reports whether the condition of type t is True, as
// KServe's InferenceServiceStatus.IsConditionReady does (IsReady is
// IsConditionTrue(ConditionReady)).
func (s *InferenceServiceStatus) IsConditionTrue(t string) bool {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// AddToScheme registers InferenceService and InferenceServiceList under
// serving.kserve.io/v1beta1, for a controller-runtime client.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(V1beta1, &InferenceService{}, &InferenceServiceList{})
	metav1.AddToGroupVersion(s, V1beta1)
	return nil
}

// DeepCopyObject implements runtime.Object.
func (in *InferenceService) DeepCopyObject() runtime.Object {
	out := &InferenceService{TypeMeta: in.TypeMeta}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.deepCopyInto(&out.Spec)
	in.Status.deepCopyInto(&out.Status)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *InferenceServiceList) DeepCopyObject() runtime.Object {
	out := &InferenceServiceList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]InferenceService, len(in.Items))
		for i := range in.Items {
			out.Items[i] = *in.Items[i].DeepCopyObject().(*InferenceService)
		}
	}
	return out
}

func (in *InferenceServiceSpec) deepCopyInto(out *InferenceServiceSpec) {
	p := in.Predictor
	out.Predictor = PredictorSpec{ComponentExtensionSpec: ComponentExtensionSpec{
		MinReplicas: clonePtr(p.MinReplicas), MaxReplicas: p.MaxReplicas}}
	if m := p.Model; m != nil {
		out.Predictor.Model = &ModelSpec{
			ModelFormat: m.ModelFormat,
			Runtime:     clonePtr(m.Runtime),
			PredictorExtensionSpec: PredictorExtensionSpec{
				StorageURI:      clonePtr(m.StorageURI),
				ProtocolVersion: clonePtr(m.ProtocolVersion),
				Container:       *m.Container.DeepCopy(),
			},
		}
	}
}

func (in *InferenceServiceStatus) deepCopyInto(out *InferenceServiceStatus) {
	out.URL = in.URL
	if in.Conditions != nil {
		out.Conditions = append([]Condition(nil), in.Conditions...)
	}
	if in.Components != nil {
		out.Components = make(map[string]ComponentStatus, len(in.Components))
		for k, c := range in.Components {
			c.Address = clonePtr(c.Address)
			out.Components[k] = c
		}
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
