package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/carbongate/carbongate/forecast"
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

// failover re-places binding b, narrowed to the member cluster it was
// placed in and now evicted from there by Karmada, on the candidate the
// webhook decided among (hold.AnnotationCandidates, signed) that is not
// under eviction, can take it now and has the lowest forecast intensity
// for its run time from now — what Karmada's failover would do without
// carbongate's narrowing, choosing by carbon. Its decision's zone, region
// and cluster move with it, re-signed; its promise, made for the decided
// place, is left as made. ok is false when b is not evicted from its
// cluster or has no other candidate: the update is then re-narrowed as
// any other (reapplyBinding) and the binding waits for the member.
func (w *Webhook) failover(ctx context.Context, raw []byte, b binding, ns string, sched Scheduler) (outcome, bool) {
	a := b.Metadata.Annotations
	from := a[AnnotationCluster]
	if from == "" || b.grouped() || a[AnnotationWeights] != "" || !b.evicting(from) {
		return outcome{}, false
	}
	log := w.cfg.Logger.With("namespace", ns, "name", b.Metadata.Name, "evicted_from", from)
	d, err := hold.Parse(a)
	var m MemberCluster
	var zone forecast.Zone
	if err == nil {
		m, zone, err = w.failoverTarget(ctx, b, sched)
	}
	if err != nil {
		w.wl.failovers.WithLabelValues("waits").Inc()
		log.Warn("admission: a placed binding Karmada evicts from its member cluster stays narrowed to it and waits", "why", err.Error())
		return outcome{}, false
	}
	d.Zone, d.Region = string(zone), m.Region
	na := maps.Clone(a)
	maps.Copy(na, d.Annotations())
	na[AnnotationCluster], na[AnnotationEvictedFrom] = m.Name, from
	na[hold.AnnotationSignature] = w.cfg.Workloads.Signer.Sign(hold.Subject{Kind: BindingKind, Namespace: ns, Name: b.Metadata.Name}, na)
	p, err := newRawPatch(raw)
	if err != nil {
		return deny(400, "request.object: %v", err), true
	}
	for _, k := range slices.Sorted(maps.Keys(na)) {
		if na[k] != a[k] {
			p.set(na[k], "metadata", "annotations", k)
		}
	}
	narrow(p, b, m.Name)
	w.wl.failovers.WithLabelValues("moved").Inc()
	log.Info("admission: moved a placed binding Karmada evicts from its member cluster", "to_cluster", m.Name, "to_zone", d.Zone)
	return p.outcome(), true
}

// failoverTarget returns the member, and its zone, of lowest forecast
// intensity for binding b's run time from now among its recorded
// candidates that are not under eviction and can take it now (as
// Karmada's scheduler would take them); an error says why there is none.
func (w *Webhook) failoverTarget(ctx context.Context, b binding, sched Scheduler) (MemberCluster, forecast.Zone, error) {
	a := b.Metadata.Annotations
	cs, ok, err := hold.ParseCandidates(a)
	dur, derr := hold.DecidedDuration(a)
	if err = errors.Join(err, derr); err != nil || !ok {
		return MemberCluster{}, "", cmp.Or(err, errors.New("no candidates recorded"))
	}
	members := slices.DeleteFunc(w.cfg.Bindings.Federation.Clusters(), func(m MemberCluster) bool {
		return b.evicting(m.Name) || !slices.ContainsFunc(cs, func(c hold.Candidate) bool { return c.Cluster == m.Name })
	})
	var tolerations []corev1.Toleration
	if b.Spec.Placement != nil {
		tolerations = b.Spec.Placement.ClusterTolerations
	}
	cand := w.affinityCandidates(nil, tolerations, takingNow(members, b.Spec.Placement))
	if len(cand.zones) == 0 {
		return MemberCluster{}, "", errors.New(cand.why)
	}
	now := w.cfg.Workloads.Now().UTC()
	dec, err := w.schedule(ctx, sched, cand.zones, spec{Duration: dur.String(), Deadline: runNowDeadline(now, dur).Format(time.RFC3339)})
	if err != nil {
		return MemberCluster{}, "", fmt.Errorf("asking the gateway: %s", forecast.ErrorMessage(err))
	}
	m, found := cand.clusters[dec.Decision.Zone]
	if !found {
		return MemberCluster{}, "", fmt.Errorf("carbongate chose zone %s, which is not a candidate", dec.Decision.Zone)
	}
	return m, dec.Decision.Zone, nil
}
