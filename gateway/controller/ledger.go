package controller

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/ledger"
)

// Defaults of the ledger's Config.
const (
	// DefaultLedgerRetry is how often, in the gateway's clock, the
	// account of a finished workload whose hours are not all observed is
	// looked at again.
	DefaultLedgerRetry = 30 * time.Minute
	// DefaultLedgerHorizon is how long after the last hour of its windows
	// a workload's account waits for observations before it is recorded
	// partial.
	DefaultLedgerHorizon = 48 * time.Hour
)

// Statuses of carbongate_realized_workloads_total beyond ledger's final
// ones (realized, partial, no-power).
const (
	statusDeleted = "deleted" // deleted before it ran
	statusGone    = "gone"    // deleted after it ran, before its account was recorded
)

// recorder records the realized saving of one kind of released workload
// (or of a shadow decision: what enforcing it would have avoided)
// (package models/ledger) once the hours of its run and of running it at
// admission are observed: the signed record annotations (hold.Record), an
// Event and the realized counters.
type recorder struct {
	kind     string
	newObj   func() client.Object
	workload func(client.Object, forecast.Signal) (ledger.Workload, error)

	deps
	obs     ledger.Observations
	signal  forecast.Signal
	retry   time.Duration
	horizon time.Duration
}

func jobRecorder() *recorder {
	return &recorder{kind: "job", newObj: func() client.Object { return &batchv1.Job{} },
		workload: func(o client.Object, sig forecast.Signal) (ledger.Workload, error) {
			return hold.JobWorkload(o.(*batchv1.Job), sig)
		}}
}

func podRecorder() *recorder {
	return &recorder{kind: "pod", newObj: func() client.Object { return &corev1.Pod{} },
		workload: func(o client.Object, sig forecast.Signal) (ledger.Workload, error) {
			return hold.PodWorkload(o.(*corev1.Pod), sig)
		}}
}

// bindingRecorder records the realized saving of the Karmada
// ResourceBindings of Jobs (hold.Accounted) on Karmada's API server, from
// the run Karmada reflects from the member each was placed in.
func bindingRecorder() *recorder {
	return &recorder{kind: "resourcebinding", newObj: func() client.Object { return newBinding() },
		workload: func(o client.Object, sig forecast.Signal) (ledger.Workload, error) {
			return hold.BindingWorkload(o.(*unstructured.Unstructured), sig)
		}}
}

// accounted filters a binding recorder's events to the released or
// shadow bindings the ledger accounts (hold.Accounted: read only past the
// label, so that the updates of held bindings cost nothing), counting
// those deleted (deleted).
func (r *recorder) accounted() predicate.Funcs {
	p := predicate.NewPredicateFuncs(func(o client.Object) bool {
		l := o.GetLabels()[hold.Label]
		return (l == hold.Released || l == hold.Shadow) && hold.Accounted(o.(*unstructured.Unstructured))
	})
	p.DeleteFunc = func(ev event.DeleteEvent) bool {
		return hold.Accounted(ev.Object.(*unstructured.Unstructured)) && r.deleted(ev)
	}
	return p
}

// Reconcile records a released workload's account once it is final, and
// otherwise looks again when it may be: at the end of its windows' last
// hour, then every retry until the horizon. A workload that has not
// finished is looked at again when its status changes.
func (r *recorder) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.newObj()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if l := obj.GetLabels()[hold.Label]; (l != hold.Released && l != hold.Shadow) || !obj.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil // held, or leaving: the delete event counts it
	}
	w, ok := r.credited(obj)
	if !ok {
		return ctrl.Result{}, nil
	}
	now := r.clock.Now()
	e, err := ledger.Account(ctx, ledger.AsOf(r.obs, now), w)
	if forecast.ErrorCode(err) == forecast.EINVALID {
		r.log.Warn("ledger: not accounted", "kind", r.kind, "namespace", w.Namespace, "name", w.Name, "error", err)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err // retried with backoff
	}
	if wait, final := r.settle(&e, now); !final {
		return ctrl.Result{RequeueAfter: clock.Wall(r.clock, wait)}, nil
	}
	return ctrl.Result{}, r.record(ctx, obj, e)
}

// credited returns obj as the ledger sees it, in the gateway's clock,
// unless it is already recorded or its decision is not carbongate's (a
// decision that did not verify is never credited).
func (r *recorder) credited(obj client.Object) (ledger.Workload, bool) {
	a := obj.GetAnnotations()
	s := subjectOf(r.kind, obj)
	if r.signer.VerifyRecord(s, a) == nil || a[hold.AnnotationReleaseReason] == hold.ReasonInvalid || r.signer.Verify(s, a) != nil {
		return ledger.Workload{}, false
	}
	w, err := r.workload(obj, r.signal)
	if err != nil {
		r.log.Warn("ledger: not accounted", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "error", err)
		return ledger.Workload{}, false
	}
	// The API's timestamps are wall times; decisions and observations are
	// in the gateway's clock (a replay's differs).
	if w, err = hold.Accountable(w, a, func(t time.Time) time.Time { return clock.At(r.clock, t) }); err != nil {
		r.log.Warn("ledger: not accounted", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "error", err)
		return ledger.Workload{}, false
	}
	return w, true
}

// settle says whether e is final and, if not, how long to wait before
// looking again (0: until the object changes). An account still partial or
// unobserved at the horizon becomes final as partial.
func (r *recorder) settle(e *ledger.Entry, now time.Time) (time.Duration, bool) {
	switch {
	case e.Status == ledger.Realized || e.Status == ledger.NoPower:
		return 0, true
	case e.Started.IsZero() || e.Ended.IsZero(): // not started, running
		return 0, false
	}
	last := lastHour(e)
	switch {
	case now.Before(last):
		return last.Sub(now), false
	case now.Before(last.Add(r.horizon)):
		return r.retry, false
	}
	e.Status, e.Reason = ledger.Partial, fmt.Sprintf("hours not observed %v after the run", r.horizon)
	return 0, true
}

// lastHour is the end of the last hour either window of e overlaps.
func lastHour(e *ledger.Entry) time.Time {
	end := e.Ended
	if b := e.AdmittedAt.Add(e.Duration); b.After(end) {
		end = b
	}
	if h := forecast.HourFloor(end); !h.Equal(end) {
		return h.Add(forecast.Hour)
	}
	return end
}

// record writes e's signed record on obj, then counts it and says so.
func (r *recorder) record(ctx context.Context, obj client.Object, e ledger.Entry) error {
	orig := obj.DeepCopyObject().(client.Object)
	rec := hold.RecordOf(e)
	rec[hold.AnnotationRecordSignature] = r.signer.SignRecord(subjectOf(r.kind, obj), rec)
	a := obj.GetAnnotations()
	maps.Copy(a, rec)
	obj.SetAnnotations(a)
	// Conditioned on the resourceVersion: recorded (and counted) once.
	if err := patchOnce(ctx, r.client, obj, orig); err != nil {
		return ignoreGone(err)
	}
	// Patch read back the stored object: a mutating webhook that does not
	// know the controller's key (an older carbongate) put the record back.
	if err := r.signer.VerifyRecord(subjectOf(r.kind, obj), obj.GetAnnotations()); err != nil {
		return fmt.Errorf("ledger: the record of %s %s/%s was not stored (changed by an admission webhook?): %w", r.kind, obj.GetNamespace(), obj.GetName(), err)
	}
	mode := hold.Mode(obj.GetAnnotations())
	r.metrics.recorded(obj.GetNamespace(), mode, e)
	reason, msg := recordEvent(e)
	r.events.Event(obj, corev1.EventTypeNormal, reason, msg)
	attrs := []any{"kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "mode", mode, "status", string(e.Status), "coverage", e.Coverage}
	if e.AvoidedGrams != nil {
		attrs = append(attrs, "realized_g", *e.RealizedGrams, "run_at_admission_g", *e.BaselineGrams, "realized_avoided_g", *e.AvoidedGrams)
	}
	r.log.Info("ledger: recorded", attrs...)
	return nil
}

// recordEvent is the Event of a recorded account.
func recordEvent(e ledger.Entry) (reason, msg string) {
	switch e.Status {
	case ledger.Realized:
		msg = fmt.Sprintf("ran %s–%s in %s: %.1f g at observed %s intensity; running at admission (%s) in %s would have emitted %.1f g; realized avoided %.1f g",
			e.Started.Format(time.RFC3339), e.Ended.Format(time.RFC3339), e.Zone, *e.RealizedGrams, e.Accounting,
			e.AdmittedAt.Format(time.RFC3339), cmp.Or(e.BaselineZone, e.Zone), *e.BaselineGrams, *e.AvoidedGrams)
		if e.HasPromise {
			msg += fmt.Sprintf(" (the forecast promised %.1f g)", e.PromisedGrams)
		}
		if e.PowerEstimated {
			msg += fmt.Sprintf("; its power, %g W, estimated from what its pods request", e.PowerWatts)
		}
		if e.Mode == hold.ModeShadow {
			msg = "in shadow, what holding it to its decision would have done: " + msg
		}
		return "Realized", msg
	case ledger.NoPower:
		return "RealizedNoPower", "ran, but declares no power (" + hold.AnnotationPowerWatts + ") and requests no CPU to estimate it from: no realized grams"
	}
	return "RealizedPartial", fmt.Sprintf("%s: %.0f%% of the hours of its run and of running at admission observed; no realized grams (never filled with forecasts)",
		e.Reason, 100*e.Coverage)
}

// deleted counts a credited workload deleted before its account was
// recorded: before it ran, or after. It never asks for a reconcile.
func (r *recorder) deleted(ev event.DeleteEvent) bool {
	if !slices.Contains(watchedValues(true), ev.Object.GetLabels()[hold.Label]) {
		return false
	}
	w, ok := r.credited(ev.Object)
	if !ok {
		return false
	}
	status := statusDeleted
	if !w.Started.IsZero() {
		status = statusGone
	}
	r.metrics.ledgerWorkloads.WithLabelValues(w.Namespace, hold.Mode(ev.Object.GetAnnotations()), status).Inc()
	return false
}

// subjectOf is the subject obj's decision and record are signed for.
func subjectOf(kind string, obj client.Object) hold.Subject {
	return hold.Subject{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), GenerateName: obj.GetGenerateName()}
}
