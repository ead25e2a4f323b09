package admission

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// This file is shadow mode (hold.ModeShadow): a workload is decided as it
// would be held, and admitted with only the annotations of that decision
// and hold.AnnotationShadow (and the label hold.Label=hold.Shadow when it
// was decided). Shadow decisions and the grams they promise
// are counted apart from enforced ones.

// namespaceOptedIn reports whether a namespace's labels opt its workloads in:
// hold.NamespaceLabel enabled, or the shadow mode label.
func namespaceOptedIn(nsLabels map[string]string) bool {
	return nsLabels[hold.NamespaceLabel] == hold.NamespaceEnabled || nsLabels[hold.NamespaceModeLabel] == hold.ModeShadow
}

// mode returns the mode of the workloads of namespace ns: its
// hold.NamespaceModeLabel, else the webhook's default. A value that is
// neither mode is the default, with a warning and a log line.
func (w *Webhook) mode(ns string, nsLabels map[string]string) (mode, warning string) {
	def := hold.ModeEnforce
	if w.cfg.Workloads.Shadow {
		def = hold.ModeShadow
	}
	v, ok := nsLabels[hold.NamespaceModeLabel]
	switch {
	case !ok:
		return def, ""
	case v == hold.ModeEnforce || v == hold.ModeShadow:
		return v, ""
	}
	w.cfg.Logger.Warn("admission: invalid namespace mode", "namespace", ns, "value", forecast.Clip(v, 64), "default", def)
	return def, fmt.Sprintf("namespace %s: label %s %q is neither %s nor %s: the default %s applies", ns, hold.NamespaceModeLabel, forecast.Clip(v, 64), hold.ModeEnforce, hold.ModeShadow, def)
}

// shadowed turns the outcome of holding a workload into its shadow: only
// the operations on metadata.annotations (the decision, or why there is
// none) are kept, plus hold.AnnotationShadow, and the label hold.Label is
// hold.Shadow instead of held (the controller keeps the ledger of shadow
// decisions); the suspension, scheduling gate and pinning are dropped. An outcome without annotations
// (a denial, a workload carbongate leaves alone) is returned as it is.
func shadowed(o outcome) outcome {
	if !o.allowed {
		return o
	}
	var ops []op
	annotated := false
	label := "/metadata/labels/" + pointerEscape(hold.Label)
	for _, x := range o.patch {
		switch {
		case x.Path == "/metadata" || x.Path == "/metadata/labels":
			ops = append(ops, x)
		case x.Path == label:
			ops = append(ops, add(label, hold.Shadow))
		case x.Path == "/metadata/annotations" || strings.HasPrefix(x.Path, "/metadata/annotations/"):
			ops = append(ops, x)
			annotated = true
		}
	}
	if !annotated {
		o.patch = nil
		return o
	}
	o.patch = append(ops, add("/metadata/annotations/"+pointerEscape(hold.AnnotationShadow), "true"))
	return o
}

// Values of the "outcome" label of carbongate_admission_workload_decisions_total.
const (
	OutcomeDecided     = "decided"     // a time and place: held, or in shadow annotated only
	OutcomeUnscheduled = "unscheduled" // runs at once, carbongate.io/unscheduled says why
)

// workloadMetrics count the decisions on Jobs and Pods by mode.
type workloadMetrics struct {
	decisions *prometheus.CounterVec
	promised  *prometheus.CounterVec
	failovers *prometheus.CounterVec // failover.go
}

func newWorkloadMetrics() workloadMetrics {
	m := workloadMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_admission_workload_decisions_total",
			Help: "Jobs and bare Pods the webhook decided on CREATE (dry runs excluded), by kind (job, pod), mode (enforce: held; shadow: annotated only, run as submitted), outcome (decided; unscheduled: run at once) and workload_namespace.",
		}, []string{"kind", "mode", "outcome", "workload_namespace"}),
		promised: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_admission_promised_avoided_grams_total",
			Help: "gCO2eq the webhook's decisions promise to avoid (carbongate.io/avoided-g at admission, workloads that declare carbongate.io/power-watts), by mode (enforce, shadow) and workload_namespace. In shadow mode nothing is held: the grams are what enforcing would have promised.",
		}, []string{"mode", "workload_namespace"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_admission_binding_failovers_total",
			Help: "Reviews of updates of placed ResourceBindings Karmada is evicting from the member cluster carbongate narrowed them to, by outcome (moved: to the cleanest other candidate that can take them now; waits: none can, or none was recorded, so the binding stays narrowed to the member and waits for it). Each review counts, also of an update the API server then refuses (a conflict Karmada retries).",
		}, []string{"outcome"}),
	}
	for _, o := range []string{"moved", "waits"} { // exported at 0: an alert's increase sees the first
		m.failovers.WithLabelValues(o)
	}
	return m
}

func (m workloadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.decisions, m.promised, m.failovers}
}

// count records the decision o (before shadowed) on a workload of req in
// mode.
func (m workloadMetrics) count(req *admissionv1.AdmissionRequest, mode string, o outcome) {
	if !o.allowed || (req.DryRun != nil && *req.DryRun) {
		return
	}
	outcome := OutcomeDecided
	if _, ok := annotationOp(o, AnnotationUnscheduled); ok {
		outcome = OutcomeUnscheduled
	} else if _, ok := annotationOp(o, hold.AnnotationStart); !ok {
		return // not a decision: left alone
	}
	m.decisions.WithLabelValues(strings.ToLower(req.Kind.Kind), mode, outcome, req.Namespace).Inc()
	if v, ok := annotationOp(o, hold.AnnotationAvoidedGrams); ok {
		if g, err := strconv.ParseFloat(v, 64); err == nil && g > 0 {
			m.promised.WithLabelValues(mode, req.Namespace).Add(g)
		}
	}
}

// annotationOp returns the value o's patch gives annotation key.
func annotationOp(o outcome, key string) (string, bool) {
	path := "/metadata/annotations/" + pointerEscape(key)
	for _, x := range o.patch {
		if s, ok := x.Value.(string); ok && x.Path == path {
			return s, true
		}
	}
	return "", false
}
