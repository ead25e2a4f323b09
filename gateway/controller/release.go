package controller

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
)

// releaser releases one kind of held workload at its time.
type releaser struct {
	kind   string
	newObj func() client.Object
	// held reports whether obj is still held (suspended, gated).
	held func(client.Object) bool
	// release lets obj run.
	release func(client.Object)
	// cannotTake says why where obj is decided to run cannot take it now,
	// nothing when it can (placeable.go): the decided
	// region's nodes, read with r, for Jobs and Pods; the decided member
	// clusters for bindings.
	cannotTake func(ctx context.Context, r client.Reader, obj client.Object) (unavailable, error)
	// stage, when set, readies held obj for its release, still held
	// (stage.go), reporting whether it changed obj; lead is how long
	// ahead of the release, in wall time (0: not staged).
	stage func(client.Object) bool
	lead  time.Duration

	deps
	redecider *redecider // nil: a decision stands until its time, wherever it is
	// place moves obj's pinning when re-deciding moves its zone (place.go);
	// nil: re-deciding moves the time only (Pods).
	place *placer
}

// deps are what the workload reconcilers (releaser, recorder) act with.
type deps struct {
	client  client.Client
	clock   clock.Clock
	events  record.EventRecorder
	metrics *metrics
	log     *slog.Logger
	signer  *hold.Signer
	nodes   client.Reader // the cache cannotTake reads (nil: no check after release)
}

func jobReleaser() *releaser {
	return &releaser{kind: "job", newObj: func() client.Object { return &batchv1.Job{} },
		held: func(o client.Object) bool {
			s := o.(*batchv1.Job).Spec.Suspend
			return s != nil && *s
		},
		release:    func(o client.Object) { o.(*batchv1.Job).Spec.Suspend = new(false) },
		cannotTake: nodesCannotTake(func(o client.Object) *corev1.PodSpec { return &o.(*batchv1.Job).Spec.Template.Spec }),
		place:      jobPlacer(),
	}
}

func podReleaser() *releaser {
	gated := func(g corev1.PodSchedulingGate) bool { return g.Name == hold.Gate }
	return &releaser{kind: "pod", newObj: func() client.Object { return &corev1.Pod{} },
		held: func(o client.Object) bool { return slices.ContainsFunc(o.(*corev1.Pod).Spec.SchedulingGates, gated) },
		release: func(o client.Object) {
			p := o.(*corev1.Pod)
			p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, gated)
		},
		cannotTake: nodesCannotTake(func(o client.Object) *corev1.PodSpec { return &o.(*corev1.Pod).Spec }),
	}
}

func ctrlOptions(workers int) controller.Options {
	return controller.Options{MaxConcurrentReconciles: workers, SkipNameValidation: new(true)}
}

// Reconcile releases a held workload whose time has come and otherwise
// waits for it: the work queue wakes it at ReleaseAt.
func (r *releaser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) { // released (left the cache) or deleted
			r.forget(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if obj.GetLabels()[hold.Label] != hold.Held || !obj.GetDeletionTimestamp().IsZero() {
		r.forget(req.String())
		return ctrl.Result{}, nil
	}
	now := r.clock.Now()
	if !r.held(obj) {
		return ctrl.Result{}, r.mark(ctx, obj, now)
	}
	d, err := r.decision(obj)
	if err != nil {
		r.events.Eventf(obj, corev1.EventTypeWarning, "InvalidDecision", "releasing now: %v", err)
		return ctrl.Result{}, r.releaseNow(ctx, obj, hold.ReasonInvalid, now, now)
	}
	at := d.ReleaseAt()
	if now.Before(at) {
		if r.metrics.hold(r.kind, req.String()) {
			r.events.Eventf(obj, corev1.EventTypeNormal, "Held", "held until %s (%s), then runs in %s",
				at.Format(time.RFC3339), d.Reason(), cmp.Or(d.Region, "the cluster"))
		}
		next := at
		if r.redecider != nil && r.redecider.hourly {
			if r.redecider.due(req.String(), now) {
				d = r.redecide(ctx, obj, d, now)
				at = d.ReleaseAt()
			}
			next = nextAsk(now, at)
		}
		if now.Before(at) {
			next, err := r.stageAhead(ctx, obj, d, now, next)
			return ctrl.Result{RequeueAfter: clock.Wall(r.clock, next.Sub(now))}, err
		}
	}
	if d, err = r.moveOff(ctx, obj, d, now); err != nil {
		return ctrl.Result{}, ignoreGone(err)
	}
	return ctrl.Result{}, r.releaseNow(ctx, obj, d.Reason(), now, at)
}

// forget drops what is kept in memory of a workload no longer held.
func (r *releaser) forget(key string) {
	r.metrics.forget(r.kind, key)
	if r.redecider != nil {
		r.redecider.forget(key)
	}
}

// decision reads obj's decision and checks that the webhook signed it.
func (r *releaser) decision(obj client.Object) (hold.Decision, error) {
	a := obj.GetAnnotations()
	d, err := hold.Parse(a)
	if err != nil {
		return hold.Decision{}, err
	}
	if err := r.signer.Verify(subjectOf(r.kind, obj), a); err != nil {
		return hold.Decision{}, err
	}
	return d, nil
}

// releaseNow releases obj (due at `due`) and records it.
func (r *releaser) releaseNow(ctx context.Context, obj client.Object, reason string, now, due time.Time) error {
	return r.finish(ctx, obj, reason, now, due, true)
}

// mark records a workload someone else released.
func (r *releaser) mark(ctx context.Context, obj client.Object, now time.Time) error {
	return r.finish(ctx, obj, hold.ReasonManual, now, now, false)
}

// finish stamps obj released for reason — releasing it first when release
// is set — and records it: metrics, the event, the log.
func (r *releaser) finish(ctx context.Context, obj client.Object, reason string, now, due time.Time, release bool) error {
	orig := obj.DeepCopyObject().(client.Object)
	if release {
		r.release(obj)
	}
	stamp(obj, reason, now)
	if err := patchOnce(ctx, r.client, obj, orig); err != nil {
		return ignoreGone(err)
	}
	r.forget(client.ObjectKeyFromObject(obj).String())
	if !release {
		r.metrics.released(r.kind, reason, 0)
		r.events.Eventf(obj, corev1.EventTypeNormal, "Released", "released by someone else before its time; no longer held")
		return nil
	}
	lag := clock.Wall(r.clock, now.Sub(due))
	r.metrics.released(r.kind, reason, lag)
	// Only a verified decision gets here with ReasonScheduled; its credit
	// is bounded all the same.
	if g, ok := hold.AvoidedGrams(obj.GetAnnotations()); ok && reason == hold.ReasonScheduled {
		r.metrics.avoided.WithLabelValues(obj.GetNamespace()).Add(g)
	}
	r.events.Eventf(obj, corev1.EventTypeNormal, "Released", "released (%s) at %s, %v after its time", reason, now.Format(time.RFC3339), lag.Round(time.Millisecond))
	r.log.Info("released", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "reason", reason, "lag", lag.String())
	r.warnUnplaceable(ctx, obj)
	return nil
}

// patchOnce patches obj from orig conditioned on orig's resourceVersion:
// a replica with a stale view gets a conflict instead of acting twice.
func patchOnce(ctx context.Context, c client.Client, obj, orig client.Object) error {
	return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// stamp labels obj released, with when and why.
func stamp(obj client.Object, reason string, now time.Time) {
	l := obj.GetLabels()
	l[hold.Label] = hold.Released
	obj.SetLabels(l)
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[hold.AnnotationReleasedAt] = now.UTC().Format(time.RFC3339)
	a[hold.AnnotationReleaseReason] = reason
	obj.SetAnnotations(a)
}

// ignoreGone drops not-found errors: the object was deleted meanwhile.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsConflict(err) {
		return fmt.Errorf("changed meanwhile, retrying: %w", err)
	}
	return err
}
