package admission

import (
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// candidates are the regions a workload may be placed in.
type candidates struct {
	zones   []forecast.Zone            // distinct grid zones of regions, sorted
	inZone  map[forecast.Zone][]string // each zone's regions, by name
	regions []string                   // the regions the pod may run in
	why     string                     // when zones is empty: why
}

// rep returns the region of zone z a workload key (hold.WorkloadKey) is
// pinned to: of the zone's regions, equally green, the first hold.Ranked
// gives for it ("" when z has none).
func (c candidates) rep(z forecast.Zone, key string) string {
	r := hold.Ranked(c.inZone[z], key, func(r string) hold.Candidate { return hold.Candidate{Zone: string(z), Region: r} })
	if len(r) == 0 {
		return ""
	}
	return r[0]
}

// workloadCandidates returns the regions the pod spec ps may run in: the
// region labels (hold.RegionLabel) of the cluster's nodes that its own
// scheduling constraints admit, as the scheduler evaluates them
// (nodeSelector, required node affinity with matchExpressions and
// matchFields, NoSchedule and NoExecute taints against its tolerations).
// When no node carries a region label the cluster's configured region is
// the only candidate (time-shifting only).
func (w *Webhook) workloadCandidates(ps *corev1.PodSpec) candidates {
	wc := w.cfg.Workloads
	names, labelled := podRegions(wc.Cluster.Nodes(), ps)
	if !labelled && wc.Region != "" {
		names = []string{wc.Region}
	}
	c := candidates{inZone: map[forecast.Zone][]string{}, regions: names}
	for _, name := range slices.Sorted(slices.Values(names)) {
		if z := w.zoneOf(name); z != "" {
			c.inZone[z] = append(c.inZone[z], name)
		}
	}
	c.zones = slices.Sorted(maps.Keys(c.inZone))
	switch {
	case len(c.zones) > 0:
	case !labelled:
		c.why = "no candidate region: no node carries the label " + hold.RegionLabel + " and no cluster region is configured (or it has no grid zone)"
	case len(names) == 0:
		c.why = "no candidate region: the pod's node selector, required node affinity and tolerations admit no node labelled " + hold.RegionLabel
	default:
		c.why = "no candidate region: no region the pod may run in has a grid zone"
	}
	return c
}

// podRegions returns the distinct region labels, in node order, of the
// nodes that ps's scheduling constraints admit, and whether any node
// carries a region label at all.
func podRegions(nodes []*corev1.Node, ps *corev1.PodSpec) (regions []string, labelled bool) {
	affinity := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: *ps})
	for _, n := range nodes {
		r := n.Labels[hold.RegionLabel]
		if r == "" {
			continue
		}
		labelled = true
		if slices.Contains(regions, r) {
			continue
		}
		if ok, err := affinity.Match(n); err != nil || !ok { // an invalid term matches nothing, as for the scheduler
			continue
		}
		if _, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, ps.Tolerations, blocksScheduling, false); untolerated {
			continue
		}
		regions = append(regions, r)
	}
	return regions, labelled
}

// blocksScheduling reports whether a taint keeps untolerating pods off a
// node for good: NoSchedule or NoExecute (not PreferNoSchedule), and not
// one of the taints Kubernetes sets and removes with a node's condition
// (node.kubernetes.io/not-ready, unreachable, unschedulable, …;
// node.cloudprovider.kubernetes.io/uninitialized): a decision looks hours
// ahead, past a node's current state.
func blocksScheduling(t *corev1.Taint) bool {
	if strings.HasPrefix(t.Key, "node.kubernetes.io/") || strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/") {
		return false
	}
	return keepsOff(t)
}

// keepsOff reports whether taint t keeps what does not tolerate it off:
// NoSchedule or NoExecute, not PreferNoSchedule.
func keepsOff(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
