package admission

import (
	"fmt"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// This file places bindings whose placement has clusterAffinities:
// Karmada's ordered cluster groups (policy/v1alpha1 ClusterAffinityTerm).
// Karmada's scheduler (v1.18, scheduleResourceBindingWithClusterAffinities)
// tries them in order, from the group it last scheduled with
// (status.schedulerObservedAffinityName, the first when none), and
// schedules with the first group in which a cluster fits; the later groups
// are failover. carbongate keeps that order: its candidates are the
// clusters of the first group that allows any member cluster (by the rules
// of clusterAffinity, with the placement's clusterTolerations), and it
// decides among them as for clusterAffinity. It then puts a group of its
// own, AffinityGroup with clusterNames [the decided cluster], in front of
// the policy's groups: Karmada schedules the binding there, and should the
// cluster not fit then (NotReady, tainted, full), with the policy's own
// groups exactly as before. Karmada rewrites the groups from the policy on
// every change of the workload; the webhook puts its group back in front
// on every UPDATE, once.
//
// Divided replicas under clusterAffinities are not placed: carbongate's
// weights (staticWeightList, spread.go) are one replicaScheduling for the
// whole placement, so they would replace the policy's division in every
// failover group too, and Karmada's overflowAffinities (Divided only)
// expand a group by capacity, which carbongate does not read. Nor are
// duplicated ones whose spreadConstraints want more than one group:
// carbongate's group of one cluster could not meet them, and Karmada would
// silently pass over it.

// clusterAffinityTerm is one of a placement's clusterAffinities groups.
type clusterAffinityTerm struct {
	AffinityName string `json:"affinityName"`
	clusterAffinity
	OverflowAffinities []struct {
		AffinityName string `json:"affinityName"`
	} `json:"overflowAffinities"`
}

// Why a grouped binding is left unplaced.
const (
	whyDividedGroups = "spec.placement.clusterAffinities with Divided replicas is not placed by carbongate: " +
		"its weights would replace the policy's replica division in the failover groups too"
	whySpreadGroups = "spec.placement.clusterAffinities with spreadConstraints of minGroups above 1 is not placed by carbongate: " +
		"Karmada would pass over its group of one cluster"
	whyReservedGroup = "spec.placement.clusterAffinities has a group named " + AffinityGroup +
		", the name of the group carbongate puts first: rename it to have the binding placed"
)

// grouped reports whether the binding's placement has clusterAffinities.
func (b binding) grouped() bool {
	p := b.Spec.Placement
	return p != nil && len(p.ClusterAffinities) > 0
}

// groupsUnplaced says why binding b, with clusterAffinities, is not
// placed whatever its candidates: "" when it may be, or without groups.
func (b binding) groupsUnplaced() string {
	switch {
	case !b.grouped():
		return ""
	case b.divided():
		return whyDividedGroups
	case slices.ContainsFunc(b.Spec.Placement.SpreadConstraints, func(c spreadConstraint) bool { return c.MinGroups > 1 }):
		return whySpreadGroups
	}
	return ""
}

// groupCandidates returns the candidates of the first clusterAffinities
// group of p that, with p's clusterTolerations, allows any cluster of cs —
// the group Karmada's scheduler would use first — or none, saying why,
// when no group allows one or that group's allow none with a grid zone
// (carbongate does not pass over a group Karmada would use).
func (w *Webhook) groupCandidates(p *bindingPlacement, cs []MemberCluster) clusterCandidates {
	none := clusterCandidates{}
	var names []string
	for _, g := range p.ClusterAffinities {
		if g.AffinityName == AffinityGroup {
			none.why = whyReservedGroup
			return none
		}
		names = append(names, fmt.Sprintf("%q", forecast.Clip(g.AffinityName, 64)))
	}
	for _, g := range p.ClusterAffinities {
		c := w.affinityCandidates(&g.clusterAffinity, p.ClusterTolerations, cs)
		if c.allowed == 0 {
			continue
		}
		if len(c.zones) == 0 {
			c.why = fmt.Sprintf("no candidate cluster in group %q, the first of clusterAffinities that admits a member cluster: %s",
				forecast.Clip(g.AffinityName, 64), strings.Join(c.skipped, "; "))
		}
		return c
	}
	none.why = "no candidate cluster: no group of clusterAffinities (" + strings.Join(names, ", ") +
		") admits a member cluster with the binding's tolerations"
	return none
}

// prependGroup puts carbongate's group, clusterNames [cluster], in front
// of the binding's clusterAffinities groups, in place of any group of that
// name already there (its own, put there before), so that it is there
// once. The policy's groups are kept as the API server sent them.
func prependGroup(p *rawPatch, cluster string) {
	pl := p.object([]string{"spec", "placement"})
	if pl == nil {
		return
	}
	groups, _ := pl["clusterAffinities"].([]any)
	out := []any{map[string]any{"affinityName": AffinityGroup, "clusterNames": []any{cluster}}}
	for _, g := range groups {
		if m, ok := g.(map[string]any); ok && m["affinityName"] == AffinityGroup {
			continue
		}
		out = append(out, g)
	}
	p.set(out, "spec", "placement", "clusterAffinities")
}

// groupedTo reports whether groups start with carbongate's group of
// cluster alone and have no other group of its name: prependGroup would
// change nothing.
func groupedTo(groups []clusterAffinityTerm, cluster string) bool {
	if len(groups) == 0 {
		return false
	}
	g := groups[0]
	own := g.AffinityName == AffinityGroup && slices.Equal(g.ClusterNames, []string{cluster}) &&
		g.LabelSelector == nil && g.FieldSelector == nil && len(g.Exclude) == 0 && len(g.OverflowAffinities) == 0
	return own && !slices.ContainsFunc(groups[1:], func(t clusterAffinityTerm) bool { return t.AffinityName == AffinityGroup })
}
