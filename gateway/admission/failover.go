package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold"
)

// AnnotationEvictedFrom names the member cluster Karmada evicted a placed
// binding from (cluster or application failover), when carbongate moved it
// to another of its candidates (failover).
const AnnotationEvictedFrom = "carbongate.io/evicted-from"

// evicting reports whether Karmada is evicting the binding from cluster:
// a graceful eviction task from it (its scheduler then filters cluster
// out, so a binding narrowed to it alone fits nowhere).
func (b binding) evicting(cluster string) bool {
	return slices.ContainsFunc(b.Spec.GracefulEvictionTasks, func(t evictionTask) bool { return t.FromCluster == cluster })
}

// failover returns the annotations that move binding b — narrowed to the
// member cluster it was placed in and now evicted from there by Karmada
// — to the candidate the webhook decided among (hold.AnnotationCandidates)
// that its placement still allows, that is not under eviction, that can
// take it now and whose forecast intensity is lowest for the hours it
// runs (its decided ones, or from now when they have begun): what
// Karmada's failover would do without carbongate's narrowing, choosing by
// carbon. Its decision's zone, region and cluster move there,
// re-signed (the decision must verify first: a binding written past the
// webhook is not re-signed), and AnnotationEvictedFrom records the member
// it left; its promise moves to the new member's forecast for those hours
// against the admission's baseline (hold.Repromise); its provenance stays
// the admission's decision. None (nil) when b is not evicted from its
// cluster, is grouped or divided (Karmada's groups, carbongate's weights),
// was decided in shadow (never narrowed), or has no other
// candidate: it stays narrowed and waits for the member (reapplyBinding).
// The move is taken on an update during the eviction: Karmada drops the
// eviction task once the workload runs elsewhere or its grace period ends.
func (w *Webhook) failover(ctx context.Context, b binding, ns string, sched Scheduler) map[string]string {
	a := b.Metadata.Annotations
	from := a[AnnotationCluster]
	if from == "" || b.grouped() || b.shadow() || a[AnnotationWeights] != "" || !b.evicting(from) {
		return nil
	}
	log := w.cfg.Logger.With("namespace", ns, "name", b.Metadata.Name, "evicted_from", from)
	subject := hold.Subject{Kind: BindingKind, Namespace: ns, Name: b.Metadata.Name}
	d, err := hold.Parse(a)
	if err == nil {
		err = w.cfg.Workloads.Signer.Verify(subject, a)
	}
	var m MemberCluster
	var to gateway.Placement
	if err == nil {
		m, to, err = w.failoverTarget(ctx, b, hold.WorkloadKey(ns, b.Metadata.Name), d, sched)
	}
	if err != nil {
		w.wl.failovers.WithLabelValues("waits").Inc()
		log.Warn("admission: a placed binding Karmada evicts from its member cluster stays narrowed to it and waits", "why", err.Error())
		return nil
	}
	d.Zone, d.Region = string(to.Zone), m.Region
	na := maps.Clone(a)
	maps.Copy(na, d.Annotations())
	if !hold.Repromise(na, to.Mean, to.End.Sub(to.Start)) {
		log.Warn("admission: a binding moved off an evicted member keeps the promise made for it: its provenance does not give the baseline")
	}
	na[AnnotationCluster], na[AnnotationEvictedFrom] = m.Name, from
	na[hold.AnnotationSignature] = w.cfg.Workloads.Signer.Sign(subject, na)
	maps.DeleteFunc(na, func(k, v string) bool { return a[k] == v })
	w.wl.failovers.WithLabelValues("moved").Inc()
	log.Info("admission: moved a placed binding Karmada evicts from its member cluster", "to_cluster", m.Name, "to_zone", d.Zone)
	return na
}

// failoverTarget returns the member that binding b (key: its
// hold.WorkloadKey), decided under d, fails over to (failover) and its
// window there — another member of its zone, when one can take it and the
// zone is still the cleanest — and an error says why there is none.
func (w *Webhook) failoverTarget(ctx context.Context, b binding, key string, d hold.Decision, sched Scheduler) (MemberCluster, gateway.Placement, error) {
	a := b.Metadata.Annotations
	cs, ok, err := hold.ParseCandidates(a)
	dur, derr := hold.DecidedDuration(a)
	if err = errors.Join(err, derr); err != nil || !ok {
		return MemberCluster{}, gateway.Placement{}, cmp.Or(err, errors.New("no candidates recorded"))
	}
	// The placement's other selectors (Karmada's rewrite from the policy
	// may have changed them) over its candidates, those under eviction
	// excluded: its clusterNames are carbongate's narrowing.
	var affinity clusterAffinity
	if p := b.Spec.Placement; p != nil && p.ClusterAffinity != nil {
		affinity = *p.ClusterAffinity
	}
	affinity.ClusterNames = nil
	for _, c := range cs {
		affinity.ClusterNames = append(affinity.ClusterNames, c.Cluster)
	}
	affinity.Exclude = slices.Clone(affinity.Exclude)
	for _, t := range b.Spec.GracefulEvictionTasks {
		affinity.Exclude = append(affinity.Exclude, t.FromCluster)
	}
	tolerations := b.Spec.Placement.tolerations()
	cand := w.affinityCandidates(&affinity, tolerations, readyNow(w.cfg.Bindings.Federation.Clusters(), tolerations))
	if len(cand.zones) == 0 {
		return MemberCluster{}, gateway.Placement{}, fmt.Errorf("no other candidate can take it now (%s)", cand.why)
	}
	now := w.cfg.Workloads.Now().UTC()
	s := spec{Duration: dur.String(), Deadline: runNowDeadline(now, dur).Format(time.RFC3339)}
	if d.Start.After(now) { // its decided hours (staged, not yet dispatched)
		s.EarliestStart, s.Deadline = d.Start.Format(time.RFC3339), d.Start.Add(dur).Format(time.RFC3339)
	}
	dec, err := w.schedule(ctx, sched, cand.zones, s)
	if err != nil {
		return MemberCluster{}, gateway.Placement{}, fmt.Errorf("asking the gateway: %s", forecast.ErrorMessage(err))
	}
	m, found := cand.in(dec.Decision.Zone, key)
	if !found {
		return MemberCluster{}, gateway.Placement{}, fmt.Errorf("carbongate chose zone %s, which is not a candidate", dec.Decision.Zone)
	}
	return m, dec.Decision, nil
}
