package hold

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// The view of a Karmada federation the webhook places ResourceBindings
// with (gateway/admission's binding.go), and the hold of a binding.

// Karmada's ResourceBinding: the webhook places and holds it, the
// controller releases it.
const (
	BindingGroup   = "work.karmada.io"
	BindingVersion = "v1alpha2"
	BindingKind    = "ResourceBinding"
)

// BindingSuspension is the path of a ResourceBinding's scheduling hold:
// while true Karmada's scheduler leaves the binding unscheduled, so its
// workload exists in no member cluster (Karmada documents it for
// third-party admission holds; its detector keeps it when it rewrites the
// binding from the policy). A held binding carries it set to true, Label
// Held and the signed decision annotations; the controller sets it false
// at the decision's ReleaseAt and labels the binding Released.
var BindingSuspension = []string{"spec", "suspension", "scheduling"}

// BindingDispatching is the path of a ResourceBinding's dispatching hold:
// while true Karmada schedules the binding but dispatches nothing to the
// member clusters (its Works are suspended). Karmada's scheduler places
// bindings one at a time, so a wave of bindings released at one second
// would reach their members one by one, seconds late: the controller
// stages a held binding a lead before its ReleaseAt — scheduling released,
// dispatching held (Label still Held) — and clears both at ReleaseAt, when
// only the dispatch is left to do. Karmada's detector resets dispatching
// from the policy whenever it rewrites the binding; the webhook keeps it
// on a staged binding.
var BindingDispatching = []string{"spec", "suspension", "dispatching"}

// AnnotationCluster names the member cluster a binding was placed in (the
// greenest, when its replicas are divided over several).
const AnnotationCluster = "carbongate.io/scheduling-cluster"

// AffinityGroup is the affinityName of the group the webhook puts in
// front of the spec.placement.clusterAffinities groups of a binding it
// places (clusterNames: the decided cluster): Karmada's scheduler tries the
// groups in order, so the binding goes to the decided cluster and, should
// that cluster not fit, to the policy's own groups as before. The name is
// carbongate's: a policy whose groups use it is not placed.
const AffinityGroup = "carbongate"

// MemberCluster is what placement reads of a Karmada Cluster
// (cluster.karmada.io/v1alpha1).
type MemberCluster struct {
	Name     string
	Provider string   // spec.provider: a provider name or alias (regions.CanonicalProvider); "": any
	Region   string   // spec.region: the provider's region name
	Zones    []string // spec.zones (availability zones, not grid zones)
	Labels   map[string]string
	Taints   []corev1.Taint // spec.taints
}

// WorkloadRef is a binding's spec.resource: the workload it propagates.
type WorkloadRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

func (r WorkloadRef) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", r.Kind, r.Namespace, r.Name, r.APIVersion)
}

// Federation is the view of a Karmada control plane that placing its
// ResourceBindings needs. Implementations answer Clusters and Namespace
// from a cache; Annotations reads the control plane within ctx.
type Federation interface {
	// Clusters returns the member clusters, never written.
	Clusters() []MemberCluster
	// Namespace returns a namespace's labels and annotations on the
	// control plane, ok false when it is not known.
	Namespace(name string) (labels, annotations map[string]string, ok bool)
	// Annotations returns the annotations of the workload ref: a binding
	// does not carry its workload's.
	Annotations(ctx context.Context, ref WorkloadRef) (map[string]string, error)
}
