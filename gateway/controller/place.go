package controller

import (
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/hold"
)

// This file moves the place of a held workload when re-deciding
// (redecide.go) finds a better candidate zone (hold.AnnotationCandidates)
// while nothing of it has started, where Kubernetes and Karmada let the
// pinning change:
//
//   - a Job suspended and never started (status.startTime unset): its pod
//     template's node affinity is mutable then (Kubernetes'
//     AllowMutableSchedulingDirectives, batch validation of v1.34): the
//     region requirement the webhook ANDed last into every required term
//     is replaced, the user's own requirements untouched;
//   - a ResourceBinding whose scheduling is held (hold.BindingSuspension)
//     and that no member was scheduled to (spec.clusters empty): its
//     narrowed clusterNames, or carbongate's group in front of its
//     clusterAffinities (hold.AffinityGroup), name the new member. A
//     staged binding (scheduling released, dispatch held) is scheduled
//     already: its place stays.
//
// A Pod's place never moves: the API server lets a gated Pod's node
// affinity only be narrowed, so the region cannot be replaced.

// placer moves one kind of held workload between candidate places.
type placer struct {
	// pinned reports whether obj is pinned to from exactly as carbongate
	// pinned it and may still be moved.
	pinned func(obj client.Object, from hold.Candidate) bool
	// repin moves obj's pinning from from to to; obj is pinned (pinned).
	repin func(obj client.Object, from, to hold.Candidate)
}

// jobPlacer moves held Jobs between regions.
func jobPlacer() *placer {
	return &placer{
		pinned: func(o client.Object, from hold.Candidate) bool {
			j := o.(*batchv1.Job)
			if j.Spec.Suspend == nil || !*j.Spec.Suspend || j.Status.StartTime != nil || from.Region == "" {
				return false
			}
			terms := requiredTerms(&j.Spec.Template.Spec)
			return len(terms) > 0 && !slices.ContainsFunc(terms, func(t corev1.NodeSelectorTerm) bool { return !pinnedLast(t, from.Region) })
		},
		repin: func(o client.Object, _, to hold.Candidate) {
			terms := requiredTerms(&o.(*batchv1.Job).Spec.Template.Spec)
			for i := range terms {
				terms[i].MatchExpressions[len(terms[i].MatchExpressions)-1].Values = []string{to.Region}
			}
		},
	}
}

// requiredTerms are the required node affinity terms of ps (nil: none).
func requiredTerms(ps *corev1.PodSpec) []corev1.NodeSelectorTerm {
	a := ps.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

// pinnedLast reports whether term ends with the requirement the webhook
// adds: node region In [region].
func pinnedLast(term corev1.NodeSelectorTerm, region string) bool {
	n := len(term.MatchExpressions)
	if n == 0 {
		return false
	}
	r := term.MatchExpressions[n-1]
	return r.Key == hold.RegionLabel && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, []string{region})
}

// Where a binding's placement names its clusters.
var (
	clusterNamesPath = []string{"spec", "placement", "clusterAffinity", "clusterNames"}
	groupsPath       = []string{"spec", "placement", "clusterAffinities"}
)

// bindingPlacer moves bindings whose scheduling is held between member
// clusters.
func bindingPlacer() *placer {
	return &placer{
		pinned: func(o client.Object, from hold.Candidate) bool {
			u := o.(*unstructured.Unstructured).Object
			if !suspended(o, hold.BindingSuspension) || from.Cluster == "" || o.GetAnnotations()[hold.AnnotationCluster] != from.Cluster {
				return false
			}
			if cs, _, _ := unstructured.NestedSlice(u, "spec", "clusters"); len(cs) > 0 {
				return false // scheduled already
			}
			if g, ok := ownGroup(u); ok {
				names, _, _ := unstructured.NestedStringSlice(g, "clusterNames")
				return slices.Equal(names, []string{from.Cluster})
			}
			if groups, _, _ := unstructured.NestedSlice(u, groupsPath...); len(groups) > 0 {
				return false // groups without carbongate's in front
			}
			names, _, _ := unstructured.NestedStringSlice(u, clusterNamesPath...)
			return slices.Equal(names, []string{from.Cluster})
		},
		repin: func(o client.Object, _, to hold.Candidate) {
			u := o.(*unstructured.Unstructured).Object
			if g, ok := ownGroup(u); ok {
				g["clusterNames"] = []any{to.Cluster}
				groups, _, _ := unstructured.NestedSlice(u, groupsPath...)
				groups[0] = g
				// Cannot fail: the path holds maps (ownGroup read it).
				_ = unstructured.SetNestedSlice(u, groups, groupsPath...)
				return
			}
			_ = unstructured.SetNestedStringSlice(u, []string{to.Cluster}, clusterNamesPath...)
		},
	}
}

// ownGroup returns the first clusterAffinities group of binding u when it
// is carbongate's (hold.AffinityGroup), a copy.
func ownGroup(u map[string]any) (map[string]any, bool) {
	groups, _, _ := unstructured.NestedSlice(u, groupsPath...)
	if len(groups) == 0 {
		return nil, false
	}
	g, ok := groups[0].(map[string]any)
	return g, ok && g["affinityName"] == hold.AffinityGroup
}
