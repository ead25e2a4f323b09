package controller

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
)

// stageAhead stages held obj (releaser.stage) once its release under d
// is at most the lead away — moved off its decided place first when that
// cannot take it (moveOff) — exactly once (a patch conditioned on the
// resourceVersion, like the release), and returns when to look at obj
// again: next, or the start of the lead if that is sooner.
func (r *releaser) stageAhead(ctx context.Context, obj client.Object, d hold.Decision, now, next time.Time) (time.Time, error) {
	if r.stage == nil || r.lead <= 0 {
		return next, nil
	}
	at := d.ReleaseAt()
	from := at.Add(-clock.Span(r.clock, r.lead))
	if now.Before(from) {
		if from.Before(next) {
			return from, nil
		}
		return next, nil
	}
	if _, err := r.moveOff(ctx, obj, d, now); err != nil { // staged, it no longer moves (placer.pinned)
		return next, ignoreGone(err)
	}
	orig := obj.DeepCopyObject().(client.Object)
	if !r.stage(obj) {
		return next, nil
	}
	if err := patchOnce(ctx, r.client, obj, orig); err != nil {
		return next, ignoreGone(err)
	}
	r.metrics.staged.WithLabelValues(r.kind).Inc()
	r.log.Debug("staged ahead of its release", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(),
		"release_at", at.Format(time.RFC3339), "lead", r.lead.String())
	return next, nil
}
