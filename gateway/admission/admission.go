// Package admission is carbongate's Kubernetes mutating admission webhook
// for VmTemplates (carbongate.io/v1alpha1) and, with a Cluster, for the
// batch/v1 Jobs and bare Pods that opted in to being held until their
// decided time and place (see package hold and workload.go), and, with a
// Federation, for Karmada ResourceBindings, narrowed to the member cluster
// of the decided grid zone (binding.go). For a
// VmTemplate, on CREATE, and on UPDATE of a
// template not yet scheduled, it filters the provider's regions by latency
// from spec.originRegion, residency and grid zone, asks the gateway
// service in process where and when the job should run, and patches
// spec.schedulingRegion, spec.schedulingTime and a provenance annotation
// into the object.
//
// It implements the same semantics as the OPA policy bundle in deploy/opa
// and reads the same data files; both are checked against the fixtures in
// test/fixtures/admission. Outcomes:
//
//   - malformed or invalid spec: denied, status code 400, naming the field;
//   - no eligible region: denied, 403, saying what removed the regions;
//   - the gateway rejects the request (its 4xx, e.g. an infeasible
//     deadline): denied, 400, with the gateway's message;
//   - the gateway is unavailable or slower than Config.Timeout: denied, 503
//     ("carbongate unavailable: why"), or with Config.FailOpen admitted
//     with only the annotation carbongate.io/unscheduled = why;
//   - UPDATE of a scheduled template: never rescheduled; a change of
//     spec.schedulingRegion or spec.schedulingTime is denied (400), the
//     fields and annotations the update dropped or changed are patched
//     back (template.go);
//   - CREATE, or UPDATE of a template not yet scheduled: the decision
//     fields and annotations the object carries are removed first;
//   - other operations and kinds: admitted unchanged.
package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

// The workload kind the webhook schedules (package v1alpha1 types it).
const (
	Group    = v1alpha1.Group
	Version  = v1alpha1.Version
	Kind     = v1alpha1.Kind
	Resource = v1alpha1.Resource
)

// Annotations the webhook writes.
const (
	AnnotationProvenance  = v1alpha1.AnnotationProvenance
	AnnotationUnscheduled = v1alpha1.AnnotationUnscheduled
)

// DefaultTimeout bounds the scheduling call: well under the webhook's
// timeoutSeconds (5 in deploy/webhook) and the API server's 10 s default.
const DefaultTimeout = 2 * time.Second

// Scheduler is the gateway call the webhook needs; *gateway.Service
// implements it.
type Scheduler interface {
	Schedule(ctx context.Context, req gateway.Request) (gateway.Decision, error)
}

var _ Scheduler = (*gateway.Service)(nil)

// Config configures a Webhook.
type Config struct {
	Scheduler Scheduler // required
	Data      Data      // required: regions, zones, residency and latency
	// FailOpen admits templates unscheduled (annotated with why) when the
	// gateway is unavailable; false (the default) denies them with 503.
	FailOpen bool
	// Timeout bounds each scheduling call; default DefaultTimeout.
	Timeout time.Duration
	// MaxBody bounds the AdmissionReview the HTTP handler reads; default
	// DefaultMaxBody.
	MaxBody int64
	// RequireClientCert makes the HTTP handler refuse (401) requests
	// without a verified TLS client certificate. The TLS layer verifies
	// it against the client CA (tls.VerifyClientCertIfGiven).
	RequireClientCert bool
	// Workloads holds batch/v1 Jobs and bare Pods that opted in (package
	// hold); without its Cluster they are admitted unchanged.
	Workloads Workloads
	// Bindings places Karmada ResourceBindings (binding.go); without its
	// Federation they are admitted unchanged.
	Bindings Bindings
	Logger   *slog.Logger // nil: discard
	// Registerer, when set, registers carbongate_admission_reviews_total
	// and the workload metrics (shadow.go).
	Registerer prometheus.Registerer
}

// Results of a review, the values of the "result" label of
// carbongate_admission_reviews_total.
const (
	ResultAdmitted    = "admitted"    // allowed: scheduled, or nothing to schedule
	ResultDenied      = "denied"      // the template's fault: 400 or 403
	ResultUnavailable = "unavailable" // no schedule from the gateway: denied with 503, or admitted unscheduled (fail-open)
)

// Webhook decides AdmissionReviews. Safe for concurrent use.
type Webhook struct {
	cfg     Config
	reviews *prometheus.CounterVec
	results [3]prometheus.Counter // admitted, denied, unavailable
	wl      workloadMetrics
}

// New validates cfg and returns a Webhook.
func New(cfg Config) (*Webhook, error) {
	if cfg.Scheduler == nil || cfg.Data == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "admission: Scheduler and Data are required")
	}
	if cfg.Timeout < 0 || cfg.MaxBody < 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "admission: Timeout and MaxBody must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if wc := &cfg.Workloads; wc.Cluster != nil || cfg.Bindings.Federation != nil {
		if wc.Now == nil || wc.Signer == nil || wc.Duration < 0 || wc.MaxDelay < 0 {
			return nil, forecast.Errorf(forecast.EINVALID, "admission: Workloads (and Bindings) need Workloads.Now and Signer, and Duration and MaxDelay must not be negative")
		}
		wc.Duration = cmp.Or(wc.Duration, DefaultWorkloadDuration)
		wc.MaxDelay = cmp.Or(wc.MaxDelay, DefaultMaxDelay)
	}
	w := &Webhook{cfg: cfg, reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "carbongate_admission_reviews_total",
		Help: "AdmissionReviews decided, by result: admitted, denied (the template's fault) or unavailable (no schedule from the gateway: denied with 503, or admitted unscheduled when failing open).",
	}, []string{"result"}), wl: newWorkloadMetrics()}
	for i, r := range []string{ResultAdmitted, ResultDenied, ResultUnavailable} {
		w.results[i] = w.reviews.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		for _, c := range append(w.wl.collectors(), w.reviews) {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("admission: register metrics: %w", err)
			}
		}
	}
	return w, nil
}

// outcome is a decision before it is rendered as an AdmissionResponse.
type outcome struct {
	allowed bool
	code    int32  // status code of a denial
	message string // why it was denied, or why a fail-open admission is unscheduled
	patch   []op
	// warnings of an admission, besides message: about inputs carbongate
	// replaced by their defaults.
	warnings []string
}

func allow() outcome { return outcome{allowed: true} }

// result is the index in Webhook.results of o's result: a denial with 503
// and an admission with a message (failing open) are the gateway's
// unavailability.
func (o outcome) result() int {
	switch {
	case o.code == 503 || (o.allowed && o.message != ""):
		return 2
	case !o.allowed:
		return 1
	}
	return 0
}

func deny(code int32, format string, args ...any) outcome {
	return outcome{code: code, message: fmt.Sprintf(format, args...)}
}

// Admit decides req; requestID goes into the provenance annotation. Every
// outcome is a response (denials carry status code and message), with UID
// set to req.UID.
func (w *Webhook) Admit(ctx context.Context, req *admissionv1.AdmissionRequest, requestID string) *admissionv1.AdmissionResponse {
	o := w.decide(ctx, req, requestID, w.cfg.Scheduler)
	w.results[o.result()].Inc()
	return o.response(req.UID)
}

// decide decides req, asking sched where and when.
func (w *Webhook) decide(ctx context.Context, req *admissionv1.AdmissionRequest, requestID string, sched Scheduler) outcome {
	switch {
	case req.Kind.Group == Group && req.Kind.Kind == Kind:
		return w.decideTemplate(ctx, req, requestID, sched)
	case req.Kind.Group == BindingGroup && req.Kind.Kind == BindingKind:
		return w.decideBinding(ctx, req, requestID, sched)
	case req.Kind.Group == "batch" && req.Kind.Kind == "Job", req.Kind.Group == "" && req.Kind.Kind == "Pod":
		return w.sanitized(req, func(req *admissionv1.AdmissionRequest) outcome {
			return w.decideWorkload(ctx, req, requestID, sched)
		})
	}
	return allow()
}

// decideTemplate decides a VmTemplate.
func (w *Webhook) decideTemplate(ctx context.Context, req *admissionv1.AdmissionRequest, requestID string, sched Scheduler) outcome {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return allow()
	}
	obj, err := parseObject(req.Object.Raw)
	if err != nil {
		return deny(400, "request.object: %v", err)
	}
	if req.Operation == admissionv1.Update {
		if old, err := parseObject(req.OldObject.Raw); err == nil && old.scheduled() {
			return keepTemplateDecision(old, obj)
		}
	}
	strip, obj := stripTemplate(obj)
	o := w.scheduleTemplate(ctx, obj, requestID, sched)
	if o.allowed {
		o.patch = append(strip, o.patch...)
	}
	return o
}

// scheduleTemplate decides a VmTemplate without carbongate's outputs.
func (w *Webhook) scheduleTemplate(ctx context.Context, obj object, requestID string, sched Scheduler) outcome {
	s, bad := obj.validate()
	if len(bad) > 0 {
		return deny(400, "%s", strings.Join(bad, "; "))
	}
	rs := w.cfg.Data.Regions(s.Provider)
	if _, msg := checkOrigin(rs, s); msg != "" {
		return deny(400, "%s", msg)
	}
	e := eligible(w.cfg.Data, rs, s)
	if len(e.zones) == 0 {
		return deny(403, "%s", e.emptyMessage())
	}
	d, err := w.schedule(ctx, sched, e.zones, s)
	if err != nil {
		return w.failed(err, obj)
	}
	rep, ok := e.reps[d.Decision.Zone]
	if !ok {
		return w.unavailable(fmt.Sprintf("carbongate chose zone %s, which is not a candidate", d.Decision.Zone), obj)
	}
	p, err := scheduledPatch(obj, s, rep.Name, d, requestID)
	if err != nil {
		return w.unavailable("encoding the provenance: "+err.Error(), obj)
	}
	return outcome{allowed: true, patch: p}
}

// failed turns a failed scheduling call into its outcome: the user's fault
// (the gateway's EINVALID, EINFEASIBLE, …, a 4xx over HTTP) is denied with
// 400 and the gateway's message in both modes; anything else makes
// carbongate unavailable.
func (w *Webhook) failed(err error, obj object) outcome {
	if userFault(err) {
		return deny(400, "%s", forecast.ErrorMessage(err))
	}
	why := ""
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		why = fmt.Sprintf("no answer within %v", w.cfg.Timeout)
	case errors.Is(err, context.Canceled):
		why = "the admission request was canceled"
	default:
		// Worded as the OPA policy words carbongate's HTTP answer.
		status, msg := http.StatusInternalServerError, "internal error"
		if forecast.ErrorCode(err) == forecast.EUNAVAILABLE {
			status, msg = http.StatusServiceUnavailable, forecast.ErrorMessage(err)
		}
		why = fmt.Sprintf("carbongate answered %d: %s", status, msg)
	}
	if !errors.As(err, new(shedError)) { // shed reviews are counted, not logged
		w.cfg.Logger.Warn("admission: scheduling unavailable", "fail_open", w.cfg.FailOpen, "error", err.Error())
	}
	return w.unavailable(why, obj)
}

// unavailable denies with 503 or, failing open, admits obj with only the
// carbongate.io/unscheduled annotation.
func (w *Webhook) unavailable(why string, obj object) outcome {
	msg := "carbongate unavailable: " + why
	if !w.cfg.FailOpen {
		return deny(503, "%s", msg)
	}
	return outcome{allowed: true, message: msg, patch: annotate(nil, obj, AnnotationUnscheduled, why)}
}

// userFault reports whether err is what a gateway answers with a 4xx.
func userFault(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	switch forecast.ErrorCode(err) {
	case forecast.EINVALID, forecast.EINFEASIBLE, forecast.ENOTFOUND, forecast.ECONFLICT, forecast.EUNAUTHORIZED:
		return true
	}
	return false
}

// maxWarning bounds the warning of a fail-open admission.
const maxWarning = 256

// response renders o.
func (o outcome) response(uid types.UID) *admissionv1.AdmissionResponse {
	r := &admissionv1.AdmissionResponse{UID: uid, Allowed: o.allowed}
	switch {
	case !o.allowed:
		r.Result = &metav1.Status{Status: metav1.StatusFailure, Code: o.code, Reason: reasonOf(o.code), Message: o.message}
	case o.message != "":
		r.Result = &metav1.Status{Status: metav1.StatusSuccess, Message: o.message}
		r.Warnings = []string{forecast.Clip(o.message, maxWarning)}
	}
	if o.allowed {
		for _, m := range o.warnings {
			r.Warnings = append(r.Warnings, forecast.Clip(m, maxWarning))
		}
	}
	if len(o.patch) > 0 {
		b, err := marshalPatch(o.patch)
		if err != nil { // values are strings and decoded JSON: cannot happen
			return outcome{code: 500, message: "encoding the patch: " + err.Error()}.response(uid)
		}
		pt := admissionv1.PatchTypeJSONPatch
		r.Patch, r.PatchType = b, &pt
	}
	return r
}

func reasonOf(code int32) metav1.StatusReason {
	switch code {
	case 400:
		return metav1.StatusReasonBadRequest
	case 403:
		return metav1.StatusReasonForbidden
	case 503:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonInternalError
}
