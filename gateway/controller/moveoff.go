package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
)

// moveUnavailable is the move, for the redecisions counter, off a decided
// place that cannot take the workload at its staging or release.
const moveUnavailable = "unavailable"

// moveOff moves held obj, about to be staged or released under d, off a
// decided place that cannot take it now (cannotTake: a member cluster not
// Ready or tainted, a region without a node that can take its pods) to
// the candidate that can and whose forecast is lowest for the hours it
// runs (from its decided start, or now when later), its promise moved by
// the difference — what carbongate's narrowing took from Karmada's or
// the scheduler's choice, given back. It returns the decision in force,
// unchanged when the place can take it, when obj can no longer move
// (placer.pinned) or none of its candidates can take it either: the
// release's Unplaceable event then says why it waits. An error: the move
// failed and obj must not be released or staged in this pass.
func (r *releaser) moveOff(ctx context.Context, obj client.Object, d hold.Decision, now time.Time) (hold.Decision, error) {
	if r.nodes == nil || r.place == nil || r.redecider == nil || d.Zone == "" {
		return d, nil
	}
	why, err := r.cannotTake(ctx, r.nodes, obj)
	if err != nil || why.now == "" {
		return d, nil
	}
	pl := r.places(obj, d)
	var open []hold.Candidate
	for _, c := range pl.candidates {
		if c != pl.from && r.canTake(ctx, obj, pl.from, c) {
			open = append(open, c)
		}
	}
	dur, err := hold.DecidedDuration(obj.GetAnnotations())
	if len(open) == 0 || err != nil {
		return d, nil
	}
	// The hours it runs, with room for the gateway's clock to move on
	// while it is asked (it starts no window before its now).
	from := d.Start
	if now.After(from) {
		from = now
	}
	until := from.Add(dur + clock.Span(r.clock, r.redecider.timeout))
	best, cur, err := r.redecider.compare(ctx, dur, ask{hold.Zones(open), from, until}, ask{[]string{d.Zone}, from, until})
	to, found := hold.Find(open, string(best.Zone), hold.WorkloadKey(obj.GetNamespace(), obj.GetName()), pl.from)
	if err == nil && !found {
		err = fmt.Errorf("the gateway chose zone %s, not one of %v", best.Zone, hold.Zones(open))
	}
	if err != nil { // released where it was decided: the Unplaceable event says why it waits
		r.log.Warn("moving off an unavailable place: asking the gateway", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "error", err)
		return d, nil
	}
	best.Start = d.Start // its time stands: only the place changes
	nd, _, err := r.shift(ctx, obj, d, pl.from, to, cur, best, dur)
	if err != nil {
		return d, err
	}
	r.metrics.redecisions.WithLabelValues(r.kind, "moved", moveUnavailable).Inc()
	r.events.Eventf(obj, corev1.EventTypeWarning, "MovedOff", "%s: moved to %s, the cleanest of its candidates that can take it (%.1f gCO2eq/kWh by the forecast against %.1f where it was decided)%s",
		why.now, where(nd, to), best.Mean, cur.Mean, promised(obj.GetAnnotations()))
	r.log.Info("moved off an unavailable place", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(),
		"from_zone", d.Zone, "to_zone", nd.Zone, "to_cluster", to.Cluster, "to_region", to.Region)
	return nd, nil
}

// canTake reports whether candidate to could take obj, pinned to from,
// now: the same check as the release's, on a copy pinned to it.
func (r *releaser) canTake(ctx context.Context, obj client.Object, from, to hold.Candidate) bool {
	cp := obj.DeepCopyObject().(client.Object)
	r.place.repin(cp, from, to)
	a := cp.GetAnnotations()
	a[hold.AnnotationRegion], a[hold.AnnotationCluster] = to.Region, to.Cluster
	cp.SetAnnotations(a)
	why, err := r.cannotTake(ctx, r.nodes, cp)
	return err == nil && why.now == ""
}
