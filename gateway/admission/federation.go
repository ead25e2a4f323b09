package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway/hold"
)

// The Karmada kind the webhook places (binding.go).
const (
	BindingGroup = hold.BindingGroup
	BindingKind  = hold.BindingKind
)

// AnnotationCluster names the member cluster a ResourceBinding was placed
// in; the webhook narrows spec.placement.clusterAffinity.clusterNames to
// it (or puts AffinityGroup of it in front of the clusterAffinities
// groups) on CREATE and again on every UPDATE.
const AnnotationCluster = hold.AnnotationCluster

// AffinityGroup is the affinityName of carbongate's clusterAffinities
// group (groups.go).
const AffinityGroup = hold.AffinityGroup

// MemberCluster, WorkloadRef and Federation are hold's.
type (
	MemberCluster = hold.MemberCluster
	WorkloadRef   = hold.WorkloadRef
	Federation    = hold.Federation
)

// Bindings configures the placement of Karmada ResourceBindings; without
// a Federation they are admitted unchanged. Their decisions use
// Workloads' Now, Signer, Duration and MaxDelay.
type Bindings struct {
	Federation Federation
	// Hold also holds the bindings placed (hold.BindingSuspension) until
	// their decided start: set only when carbongate's controller releases
	// them (--controller with --karmada-kubeconfig).
	Hold bool
}

// bindingPlacement is the part of a binding's spec.placement that decides
// its candidate clusters (Karmada's policy/v1alpha1 Placement).
type bindingPlacement struct {
	ClusterAffinity    *clusterAffinity      `json:"clusterAffinity"`
	ClusterAffinities  []clusterAffinityTerm `json:"clusterAffinities"`
	ClusterTolerations []corev1.Toleration   `json:"clusterTolerations"`
	ReplicaScheduling  *replicaScheduling    `json:"replicaScheduling"`
	SpreadConstraints  []spreadConstraint    `json:"spreadConstraints"`
}

type clusterAffinity struct {
	LabelSelector *metav1.LabelSelector `json:"labelSelector"`
	FieldSelector *struct {
		MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions"`
	} `json:"fieldSelector"`
	ClusterNames []string `json:"clusterNames"`
	Exclude      []string `json:"exclude"`
}

// binding is a ResourceBinding under admission.
type binding struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Resource WorkloadRef `json:"resource"`
		Replicas int32       `json:"replicas"`
		// ReplicaRequirements are what each replica requests, read only
		// to size a binding that declares no power (bindingPower).
		ReplicaRequirements json.RawMessage   `json:"replicaRequirements"`
		Placement           *bindingPlacement `json:"placement"`
		Suspension          *struct {
			Scheduling  *bool `json:"scheduling"`
			Dispatching *bool `json:"dispatching"`
		} `json:"suspension"`
		GracefulEvictionTasks []evictionTask `json:"gracefulEvictionTasks"`
	} `json:"spec"`
}

// evictionTask is a member cluster Karmada is evicting a binding from.
type evictionTask struct {
	FromCluster string `json:"fromCluster"`
}

// clusterCandidates are the member clusters a binding may be placed in.
type clusterCandidates struct {
	zones   []forecast.Zone                   // distinct grid zones, sorted
	members map[forecast.Zone][]MemberCluster // each zone's clusters, by name
	allowed int                               // clusters the placement allows, with a grid zone or not
	skipped []string                          // clusters the placement allows that have no grid zone, and why
	why     string                            // when zones is empty: why
}

// in returns the member cluster of zone z the binding key
// (hold.WorkloadKey) goes to: the first of ranked; false when z is not a
// candidate.
func (c clusterCandidates) in(z forecast.Zone, key string) (MemberCluster, bool) {
	r := c.ranked(z, key)
	if len(r) == 0 {
		return MemberCluster{}, false
	}
	return r[0], true
}

// ranked returns the member clusters of zone z, equally green, in the
// order hold.Ranked gives for the binding key — the order the controller
// moves it by, too.
func (c clusterCandidates) ranked(z forecast.Zone, key string) []MemberCluster {
	return hold.Ranked(c.members[z], key, func(m MemberCluster) hold.Candidate { return memberCandidate(z, m) })
}

// memberCandidate is member cluster m of zone z as a hold.Candidate.
func memberCandidate(z forecast.Zone, m MemberCluster) hold.Candidate {
	return hold.Candidate{Zone: string(z), Region: m.Region, Cluster: m.Name}
}

// bindingCandidates returns the clusters of cs that placement p allows, as
// Karmada's scheduler filters them (clusterAffinity's exclude,
// labelSelector, fieldSelector on provider, region and zone, and
// clusterNames, ANDed; NoSchedule and NoExecute taints against
// clusterTolerations), each mapped to the grid zone of its provider's
// region. With clusterAffinities they are those of the first group that
// allows any cluster (groupCandidates).
func (w *Webhook) bindingCandidates(p *bindingPlacement, cs []MemberCluster) clusterCandidates {
	if p == nil {
		return w.affinityCandidates(nil, nil, cs)
	}
	if len(p.ClusterAffinities) > 0 {
		return w.groupCandidates(p, cs)
	}
	return w.affinityCandidates(p.ClusterAffinity, p.ClusterTolerations, cs)
}

// affinityCandidates returns the clusters of cs that affinity a (nil: any)
// and tolerations allow, each mapped to its grid zone.
func (w *Webhook) affinityCandidates(a *clusterAffinity, tolerations []corev1.Toleration, cs []MemberCluster) clusterCandidates {
	c := clusterCandidates{members: map[forecast.Zone][]MemberCluster{}}
	for _, m := range slices.SortedFunc(slices.Values(cs), func(a, b MemberCluster) int { return strings.Compare(a.Name, b.Name) }) {
		if !placementAllows(a, tolerations, m) {
			continue
		}
		c.allowed++
		z, why := w.clusterZone(m)
		if z == "" {
			c.skipped = append(c.skipped, fmt.Sprintf("cluster %s is not a candidate: %s", m.Name, why))
			continue
		}
		c.members[z] = append(c.members[z], m)
	}
	c.zones = slices.Sorted(maps.Keys(c.members))
	switch {
	case len(c.zones) > 0:
	case c.allowed == 0:
		c.why = "no candidate cluster: the binding's cluster affinity and tolerations admit no member cluster"
	default:
		c.why = "no candidate cluster: " + strings.Join(c.skipped, "; ")
	}
	return c
}

// placementAllows reports whether Karmada may schedule a binding whose
// cluster affinity is a (nil: any) and whose clusterTolerations are
// tolerations to m (pkg/util.ClusterMatches and the TaintToleration
// filter of Karmada v1.18).
func placementAllows(a *clusterAffinity, tolerations []corev1.Toleration, m MemberCluster) bool {
	if a != nil {
		if slices.Contains(a.Exclude, m.Name) || !affinityMatches(a, m) {
			return false
		}
		if len(a.ClusterNames) > 0 && !slices.Contains(a.ClusterNames, m.Name) {
			return false
		}
	}
	_, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), m.Taints, tolerations, blocksPlacement, false)
	return !untolerated
}

// affinityMatches evaluates a's label and field selectors on m; an
// invalid selector matches nothing, as for Karmada.
func affinityMatches(a *clusterAffinity, m MemberCluster) bool {
	if a.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil || !s.Matches(labels.Set(m.Labels)) {
			return false
		}
	}
	if a.FieldSelector == nil {
		return true
	}
	var fields []corev1.NodeSelectorRequirement
	for _, r := range a.FieldSelector.MatchExpressions {
		if r.Key != "zone" {
			fields = append(fields, r)
		} else if !zonesMatch(r, m.Zones) {
			return false
		}
	}
	if len(fields) == 0 {
		return true
	}
	// provider and region are matched as the labels of a node would be.
	set := map[string]string{}
	if m.Provider != "" {
		set["provider"] = m.Provider
	}
	if m.Region != "" {
		set["region"] = m.Region
	}
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: fields}}})
	return err == nil && sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: set}})
}

// zonesMatch is Karmada's match of a "zone" requirement on spec.zones.
func zonesMatch(r corev1.NodeSelectorRequirement, zones []string) bool {
	in := slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(r.Values, z) })
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return in
	case corev1.NodeSelectorOpNotIn:
		return !in
	case corev1.NodeSelectorOpExists:
		return len(zones) > 0
	case corev1.NodeSelectorOpDoesNotExist:
		return len(zones) == 0
	}
	return false
}

// takingNow are the clusters of cs that can take a binding placed by p
// (nil: no tolerations) now, for one that runs at once: those without a
// taint Karmada sets with a cluster's condition (cluster.karmada.io/
// not-ready, unreachable, …) that p does not tolerate — all of cs when
// none can (it then waits for its member, as Karmada would make it).
func takingNow(cs []MemberCluster, p *bindingPlacement) []MemberCluster {
	if now := readyNow(cs, p.tolerations()); len(now) > 0 {
		return now
	}
	return cs
}

// readyNow returns the clusters of cs without a condition taint
// (conditionTaint) that tolerations do not tolerate.
func readyNow(cs []MemberCluster, tolerations []corev1.Toleration) []MemberCluster {
	return slices.DeleteFunc(slices.Clone(cs), func(m MemberCluster) bool {
		_, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), m.Taints, tolerations, conditionTaint, false)
		return untolerated
	})
}

// tolerations are the placement's clusterTolerations (none without one).
func (p *bindingPlacement) tolerations() []corev1.Toleration {
	if p == nil {
		return nil
	}
	return p.ClusterTolerations
}

// conditionTaint reports whether t is a taint Karmada sets with a
// cluster's condition, keeping bindings off it now.
func conditionTaint(t *corev1.Taint) bool {
	return karmadaCondition(t) && keepsOff(t)
}

// karmadaCondition reports whether Karmada sets and removes t with a
// cluster's condition (cluster.karmada.io/not-ready, unreachable, …).
func karmadaCondition(t *corev1.Taint) bool {
	return strings.HasPrefix(t.Key, "cluster.karmada.io/")
}

// blocksPlacement reports whether a cluster taint keeps untolerating
// bindings off the cluster for good: NoSchedule or NoExecute, and not one
// of the taints Karmada sets and removes with a cluster's condition
// (cluster.karmada.io/not-ready, unreachable, …): a decision looks hours
// ahead, past a cluster's current state.
func blocksPlacement(t *corev1.Taint) bool {
	return !karmadaCondition(t) && keepsOff(t)
}

// clusterZone returns the grid zone of m's region, or "" and why not.
func (w *Webhook) clusterZone(m MemberCluster) (forecast.Zone, string) {
	if m.Region == "" {
		return "", "no spec.region"
	}
	providers := regions.Providers()
	if m.Provider != "" {
		p, ok := regions.CanonicalProvider(m.Provider)
		if !ok {
			return "", fmt.Sprintf("spec.provider %q is not a known cloud provider (%s)", forecast.Clip(m.Provider, 64), strings.Join(regions.Providers(), ", "))
		}
		providers = []string{p}
	}
	for _, p := range providers {
		for _, r := range w.cfg.Data.Regions(p) {
			if r.Name == m.Region && r.Zone != "" {
				return r.Zone, ""
			}
		}
	}
	return "", fmt.Sprintf("region %q of %s has no grid zone", forecast.Clip(m.Region, 64), strings.Join(providers, "/"))
}
