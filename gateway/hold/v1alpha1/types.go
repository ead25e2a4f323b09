// Package v1alpha1 is the typed API of carbongate.io/v1alpha1: the Go types
// of the VmTemplate kind whose CustomResourceDefinition is
// deploy/crd/vmtemplate.yaml, its group, version, kind and resource, and
// the scheme registration the controller's client needs (kubebuilder's
// api/v1 model, written by hand). A test checks the CRD's schema and the
// controller's RBAC (deploy/controller/rbac.yaml and the chart's) against
// these types and constants.
//
// The admission webhook (gateway/admission) reads a VmTemplate field by
// field from its raw JSON, so that a field of the wrong JSON type is
// denied with a message naming it rather than failing the whole decode;
// its field names are checked against Spec's. The controller
// (gateway/controller) reads and writes VmTemplates as these types.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/carbongate/carbongate/gateway/hold"
)

// The kind this package types.
const (
	Group    = "carbongate.io"
	Version  = "v1alpha1"
	Kind     = "VmTemplate"
	ListKind = "VmTemplateList"
	Resource = "vmtemplates"
)

var (
	// GroupVersion is carbongate.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// GroupVersionKind is VmTemplate's.
	GroupVersionKind = GroupVersion.WithKind(Kind)
	// GroupVersionResource is vmtemplates'.
	GroupVersionResource = GroupVersion.WithResource(Resource)
)

// DefaultProvider is the provider of a VmTemplate without spec.provider:
// the provider with latency data in the OPA bundle.
const DefaultProvider = "azure"

// Annotations the webhook writes on a VmTemplate: the provenance of its
// decision (Provenance as JSON), or, failing open, why it was admitted
// unscheduled (text).
const (
	AnnotationProvenance  = hold.AnnotationProvenance
	AnnotationUnscheduled = hold.AnnotationUnscheduled
)

// Provenance is the value of AnnotationProvenance: the decision the
// webhook patched in and what it rests on. Its members are in the order
// the OPA bundle writes them (sorted), so both write the same text.
type Provenance struct {
	End           string            `json:"end"`            // RFC 3339 end of the chosen window
	MeanIntensity float64           `json:"mean_intensity"` // gCO2eq/kWh over the window
	Region        string            `json:"region"`         // the chosen region (spec.schedulingRegion)
	RequestID     string            `json:"request_id"`
	SavingsPct    *float64          `json:"savings_pct"` // null without a baseline
	Sources       map[string]string `json:"sources"`     // zone → forecast source, every candidate
	Start         string            `json:"start"`       // RFC 3339 start (spec.schedulingTime)
	Zone          string            `json:"zone"`        // grid zone of Region
}

// Phases of a VmTemplate (status.phase), written by the controller.
const (
	PhasePending     = "Pending"     // no decision yet
	PhaseScheduled   = "Scheduled"   // waiting for its release time
	PhaseReleased    = "Released"    // the provider's object exists, not ready yet
	PhaseProvisioned = "Provisioned" // the provider's object is Ready
	PhaseExpired     = "Expired"     // its deadline passed before it could be released
	PhaseFailed      = "Failed"      // see status.message; retried
)

// Phases lists every phase, as the CRD's enum of status.phase does.
var Phases = []string{PhasePending, PhaseScheduled, PhaseReleased, PhaseProvisioned, PhaseExpired, PhaseFailed}

// VmTemplate is a batch VM job: the webhook fills its decision
// (spec.schedulingRegion, spec.schedulingTime, spec.instanceType and the
// annotations above) on CREATE; the controller creates the provider's
// object at its release time and reports in status.
type VmTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VmTemplateSpec   `json:"spec"`
	Status VmTemplateStatus `json:"status,omitempty"`
}

// VmTemplateSpec is what a VmTemplate asks for and, in SchedulingRegion
// and SchedulingTime, the webhook's decision. An optional field is a
// pointer: absent (nil) and empty differ to the webhook (an empty
// instanceType is given; an empty deadline or residency is absent) and to
// provider templates, which see the spec as the API server stores it.
// The CRD's descriptions say what each field means.
type VmTemplateSpec struct {
	MinCPU           *int64  `json:"minCPU,omitempty"`
	MinRAM           *string `json:"minRAM,omitempty"` // a Kubernetes quantity string, "16Gi"
	Duration         string  `json:"duration"`         // ISO 8601 (PT3H) or Go (3h)
	Deadline         *string `json:"deadline,omitempty"`
	MaxLatencyMs     int64   `json:"maxLatencyMs"`
	OriginRegion     string  `json:"originRegion"`
	Provider         *string `json:"provider,omitempty"` // absent: DefaultProvider
	Residency        *string `json:"residency,omitempty"`
	SchedulingRegion *string `json:"schedulingRegion,omitempty"`
	SchedulingTime   *string `json:"schedulingTime,omitempty"` // RFC 3339
	InstanceType     *string `json:"instanceType,omitempty"`
}

// VmTemplateStatus is written by the controller.
type VmTemplateStatus struct {
	Phase      string             `json:"phase,omitempty"`
	Message    string             `json:"message,omitempty"`
	Region     string             `json:"region,omitempty"`
	Zone       string             `json:"zone,omitempty"`
	Start      string             `json:"start,omitempty"`     // RFC 3339
	ReleaseAt  string             `json:"releaseAt,omitempty"` // RFC 3339
	SavingsPct *float64           `json:"savingsPct,omitempty"`
	ReleasedAt string             `json:"releasedAt,omitempty"` // RFC 3339
	Resource   *ResourceRef       `json:"resource,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResourceRef names the provider's object the controller created (owned
// by the VmTemplate, in its namespace).
type ResourceRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// VmTemplateList is a list of VmTemplates.
type VmTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VmTemplate `json:"items"`
}

// AddToScheme registers VmTemplate and VmTemplateList in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &VmTemplate{}, &VmTemplateList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
