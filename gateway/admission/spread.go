package admission

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
)

// This file divides the replicas of a Divided binding (Deployments, Jobs
// with parallelism, … whose policy's replicaScheduling is Divided) by
// carbon: the binding goes to the fewest member clusters its spread
// constraints allow, chosen greenest first by their forecast intensity
// over the decided window, with the fewest replicas the spread allows
// outside the greenest (spec.placement.replicaScheduling.
// weightPreference.staticWeightList, replicaDivisionPreference Weighted;
// see weights). Without spread constraints that is the one greenest
// cluster, with all replicas. The weights are recorded (AnnotationWeights)
// and applied again on every UPDATE, as the cluster is.

// AnnotationWeights records the weighted clusters of a divided binding:
// "cluster=weight" pairs separated by commas, greenest first.
const AnnotationWeights = "carbongate.io/scheduling-weights"

// Karmada's replica scheduling values carbongate reads and writes.
const (
	replicasDivided = "Divided"
	divisionWeight  = "Weighted"
)

type replicaScheduling struct {
	Type string `json:"replicaSchedulingType"`
}

// spreadConstraint is one of a placement's spreadConstraints.
type spreadConstraint struct {
	SpreadByField string `json:"spreadByField"`
	SpreadByLabel string `json:"spreadByLabel"`
	MaxGroups     int    `json:"maxGroups"`
	MinGroups     int    `json:"minGroups"`
}

// weighted is a cluster of a divided binding and its weight.
type weighted struct {
	cluster string
	weight  int64
}

// divided reports whether the binding's replicas are divided among
// clusters (more than one replica, replicaScheduling Divided).
func (b binding) divided() bool {
	p := b.Spec.Placement
	return b.Spec.Replicas > 1 && p != nil && p.ReplicaScheduling != nil && p.ReplicaScheduling.Type == replicasDivided
}

// weigh chooses the clusters of a divided binding decided d (for dur) and
// their weights, or says why it cannot: the greenest cluster is d's; when
// the spread constraints need more groups, the forecast of every
// candidate zone over d's window decides which clusters are added (in
// each zone, in the order clusterCandidates.ranked gives for key).
func (w *Webhook) weigh(ctx context.Context, sched Scheduler, b binding, key string, cand clusterCandidates, d gateway.Decision, dur time.Duration) ([]weighted, string) {
	first, _ := cand.in(d.Decision.Zone, key)
	cons := b.Spec.Placement.SpreadConstraints
	if spreadSatisfied(cons, []MemberCluster{first}) {
		return []weighted{{cluster: first.Name, weight: 1}}, ""
	}
	s := spec{Duration: dur.String(), EarliestStart: d.Decision.Start.UTC().Format(time.RFC3339),
		Deadline: d.Decision.Start.Add(dur).UTC().Format(time.RFC3339)}
	at, err := w.schedule(ctx, sched, cand.zones, s)
	if err != nil {
		return nil, "cannot weigh the clusters of the spread constraints: " + forecast.ErrorMessage(err)
	}
	means := map[forecast.Zone]float64{} // the alternatives are every zone's window
	for _, a := range at.Alternatives {
		means[a.Zone] = a.Mean
	}
	order := slices.Clone(cand.zones)
	slices.SortStableFunc(order, func(x, y forecast.Zone) int { return cmp.Compare(means[x], means[y]) })
	chosen := []MemberCluster{first}
	for _, z := range order {
		for _, m := range cand.ranked(z, key) {
			if m.Name == first.Name || !addsGroup(cons, chosen, m) {
				continue
			}
			chosen = append(chosen, m)
			if spreadSatisfied(cons, chosen) {
				return weights(chosen, b.Spec.Replicas), ""
			}
		}
	}
	return nil, fmt.Sprintf("the spread constraints need more groups than the candidate clusters (in %d grid zones) give", len(cand.zones))
}

// weights divides replicas over clusters (the greenest first) for the
// least emissions the spread allows: one replica in each cluster but the
// greenest, the rest in the greenest; the weights are those counts, so
// that Karmada divides a scaled workload in the same proportion. With
// fewer replicas than clusters every weight is 1 (Karmada's scheduler
// then reports the spread it cannot meet).
func weights(clusters []MemberCluster, replicas int32) []weighted {
	out := make([]weighted, len(clusters))
	for i, m := range clusters {
		out[i] = weighted{cluster: m.Name, weight: 1}
	}
	if n := int64(len(clusters)); int64(replicas) > n {
		out[0].weight = int64(replicas) - n + 1
	}
	return out
}

// group is the group of m a constraint spreads by ("" when m has none).
func (c spreadConstraint) group(m MemberCluster) string {
	if c.SpreadByLabel != "" {
		return m.Labels[c.SpreadByLabel]
	}
	switch c.SpreadByField {
	case "region":
		return m.Region
	case "provider":
		return m.Provider
	case "zone":
		if len(m.Zones) > 0 {
			return m.Zones[0]
		}
		return ""
	}
	return m.Name // cluster
}

// groups counts the distinct groups of ms under c.
func (c spreadConstraint) groups(ms []MemberCluster) int {
	seen := map[string]bool{}
	for _, m := range ms {
		seen[c.group(m)] = true
	}
	return len(seen)
}

// spreadSatisfied reports whether ms meet every constraint's minGroups.
func spreadSatisfied(cons []spreadConstraint, ms []MemberCluster) bool {
	for _, c := range cons {
		if c.groups(ms) < c.MinGroups {
			return false
		}
	}
	return true
}

// addsGroup reports whether adding m to ms brings a constraint short of
// its minGroups a new group without taking any past its maxGroups.
func addsGroup(cons []spreadConstraint, ms []MemberCluster, m MemberCluster) bool {
	with := append(slices.Clone(ms), m)
	adds := false
	for _, c := range cons {
		n, after := c.groups(ms), c.groups(with)
		if c.MaxGroups > 0 && after > c.MaxGroups {
			return false
		}
		if after > n && n < c.MinGroups {
			adds = true
		}
	}
	return adds
}

// formatWeights writes ws as AnnotationWeights holds them.
func formatWeights(ws []weighted) string {
	parts := make([]string, len(ws))
	for i, x := range ws {
		parts[i] = x.cluster + "=" + strconv.FormatInt(x.weight, 10)
	}
	return strings.Join(parts, ",")
}

// parseWeights reads AnnotationWeights; ok false when it does not parse.
func parseWeights(s string) ([]weighted, bool) {
	var ws []weighted
	for part := range strings.SplitSeq(s, ",") {
		name, v, found := strings.Cut(part, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !found || name == "" || err != nil || n < 1 {
			return nil, false
		}
		ws = append(ws, weighted{cluster: name, weight: n})
	}
	return ws, len(ws) > 0
}

// divide narrows the binding's clusters to ws and sets their static
// weights.
func divide(p *rawPatch, ws []weighted) {
	names := make([]string, len(ws))
	list := make([]map[string]any, len(ws))
	for i, x := range ws {
		names[i] = x.cluster
		list[i] = map[string]any{"targetCluster": map[string]any{"clusterNames": []string{x.cluster}}, "weight": x.weight}
	}
	p.set(names, "spec", "placement", "clusterAffinity", "clusterNames")
	p.set(divisionWeight, "spec", "placement", "replicaScheduling", "replicaDivisionPreference")
	p.set(map[string]any{"staticWeightList": list}, "spec", "placement", "replicaScheduling", "weightPreference")
}
