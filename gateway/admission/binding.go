package admission

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
)

// This file places Karmada ResourceBindings (work.karmada.io/v1alpha2):
// on CREATE of the binding of an opted-in workload (the deadline
// annotation on the workload, or its namespace labelled on the control
// plane, as for Jobs) it narrows spec.placement.clusterAffinity.
// clusterNames to the member cluster in the decided grid zone (under
// clusterAffinities it puts a group of that cluster first: groups.go) and
// records the decision as for Jobs (the annotations, their signature for
// the binding, the provenance) plus AnnotationCluster. With Bindings.Hold it
// also holds the binding until the decided start (hold.BindingSuspension,
// Label Held), for the controller to release; a binding created already
// suspended is its creator's to release and is placed only. Karmada rewrites a
// binding's placement from its policy whenever the workload changes: on
// UPDATE the recorded decision is applied again, never decided anew. A
// binding carbongate cannot place is admitted unchanged with
// AnnotationUnscheduled saying why: it never blocks a binding.

// bindingOutputs are the annotations only carbongate writes on a binding
// (also the power it copies from the workload: the ledger charges it).
var bindingOutputs = append(slices.Clone(hold.Outputs), AnnotationCluster, AnnotationWeights, AnnotationEvictedFrom, hold.AnnotationPowerWatts)

// decideBinding places a ResourceBinding.
func (w *Webhook) decideBinding(ctx context.Context, req *admissionv1.AdmissionRequest, requestID string, sched Scheduler) outcome {
	if w.cfg.Bindings.Federation == nil || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return allow()
	}
	var old binding // none on CREATE
	if req.Operation == admissionv1.Update {
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return deny(400, "request.oldObject: not a ResourceBinding: %v", err)
		}
	}
	ops, raw, bad := sanitizeBinding(req, old.Metadata, w.cfg.Workloads.Signer)
	if bad != "" {
		return deny(400, "%s", bad)
	}
	var b binding
	if err := json.Unmarshal(raw, &b); err != nil {
		return deny(400, "request.object: not a ResourceBinding: %v", err)
	}
	var o outcome
	if req.Operation == admissionv1.Update {
		o = reapplyBinding(raw, b, old, w.failover(ctx, b, req.Namespace, sched))
	} else {
		o = w.placeBinding(ctx, raw, b, req.Namespace, requestID, sched)
	}
	if o.allowed {
		o.patch = append(ops, o.patch...)
	}
	return o
}

// sanitizeBinding makes the carbongate.io outputs of req's binding those
// of its old object, whose metadata is old (empty on CREATE), returning
// the ops and the object with them applied; a held binding's decision
// moved by the controller (re-signed: it verifies with signer) keeps its
// new time, and one whose ledger record verifies as the controller's
// keeps it.
func sanitizeBinding(req *admissionv1.AdmissionRequest, old metav1.ObjectMeta, signer *hold.Signer) ([]op, []byte, string) {
	s, bad := newOutputs(req.Object.Raw)
	if bad != "" {
		return nil, nil, bad
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &meta); err != nil {
		return nil, nil, fmt.Sprintf("request.object: %v", err)
	}
	redecided := req.Operation == admissionv1.Update && signer != nil && old.Labels[hold.Label] == hold.Held && meta.Labels[hold.Label] == hold.Held &&
		signer.Verify(hold.Subject{Kind: BindingKind, Namespace: req.Namespace, Name: meta.Name}, meta.Annotations) == nil
	keep := hold.SignedKeys(meta.Annotations)
	for _, k := range bindingOutputs {
		if !redecided || !slices.Contains(keep, k) {
			s.set("annotations", k, old.Annotations)
		}
	}
	// The ledger's record: only the controller's, as for Jobs.
	if !recordVerified(req, meta.ObjectMeta, signer) {
		s.restore(hold.Record, old.Annotations)
	}
	return s.applied(req.Object.Raw)
}

// reapplyBinding narrows the placement of an updated binding to the
// cluster it was placed in, if any — or, when a failover moved it
// (moved: the annotations that change, failover.go), to the cluster it
// moved to, with those annotations — puts back the hold label of old
// (the binding before the update) if the update dropped it, and keeps a
// staged binding's dispatch held (hold.BindingDispatching: Karmada's
// detector resets it from the policy) until the controller labels it
// released.
func reapplyBinding(raw []byte, b binding, old binding, moved map[string]string) outcome {
	cluster := cmp.Or(moved[AnnotationCluster], b.Metadata.Annotations[AnnotationCluster])
	if b.shadow() { // decided in shadow: goes where its policy sends it
		cluster = ""
	}
	// Weights are set again on every update: comparing them costs as much.
	ws, divided := parseWeights(b.Metadata.Annotations[AnnotationWeights])
	divided = divided && !b.grouped() && !b.shadow() // a policy changed to groups since: weights do not apply
	renarrow := !divided && cluster != "" && !b.narrowedTo(cluster)
	oldLabel := old.Metadata.Labels[hold.Label]
	label, labelled := b.Metadata.Labels[hold.Label]
	keepLabel := !labelled && oldLabel != ""
	if keepLabel {
		label = oldLabel
	}
	restage := old.dispatchHeld() && !b.dispatchHeld() && oldLabel == hold.Held && label == hold.Held
	if !divided && !renarrow && !keepLabel && !restage && len(moved) == 0 {
		return allow()
	}
	p, err := newRawPatch(raw)
	if err != nil {
		return deny(400, "request.object: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(moved)) {
		p.set(moved[k], "metadata", "annotations", k)
	}
	switch {
	case divided:
		divide(p, ws)
	case renarrow:
		narrow(p, b, cluster)
	}
	if keepLabel {
		p.set(oldLabel, "metadata", "labels", hold.Label)
	}
	if restage {
		p.set(true, hold.BindingDispatching...)
	}
	return p.outcome()
}

// narrow places binding b on cluster: its clusterAffinity.clusterNames set
// to [cluster] (its other selectors, ANDed, admitted the cluster), or,
// with clusterAffinities, carbongate's group of cluster put first.
func narrow(p *rawPatch, b binding, cluster string) {
	if b.grouped() {
		prependGroup(p, cluster)
		return
	}
	p.set([]string{cluster}, "spec", "placement", "clusterAffinity", "clusterNames")
}

// placeBinding decides where binding b runs, or admits it unchanged
// saying why not.
func (w *Webhook) placeBinding(ctx context.Context, raw []byte, b binding, ns, requestID string, sched Scheduler) outcome {
	fed := w.cfg.Bindings.Federation
	ref := b.Spec.Resource
	if ref.Namespace == "" {
		ref.Namespace = ns
	}
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	ann, err := fed.Annotations(actx, ref)
	cancel()
	if err != nil {
		w.cfg.Logger.Warn("admission: reading a binding's workload", "workload", ref.String(), "error", err.Error())
		return unplaced(raw, fmt.Sprintf("cannot read the workload %s: %v", ref, err))
	}
	nsLabels, nsAnnotations, _ := fed.Namespace(ref.Namespace)
	if _, annotated := ann[hold.AnnotationDeadline]; !annotated && !namespaceOptedIn(nsLabels) {
		return allow()
	}
	wl := workload{meta: &metav1.ObjectMeta{Annotations: ann}}
	win, bad := w.workloadWindow(wl, ref.Namespace, nsAnnotations, w.cfg.Workloads.Now().UTC())
	var watts float64
	if bad == "" {
		watts, bad = powerOf(wl.meta)
	}
	if bad != "" {
		return unplaced(raw, "the workload's "+bad)
	}
	mode, modeWarning := w.mode(ref.Namespace, nsLabels)
	if modeWarning != "" {
		win.warnings = append(win.warnings, modeWarning)
	}
	placeOnly := win.runNow != "" // no delay: placed in space only
	if placeOnly {
		win.deadline = runNowDeadline(win.now, win.dur)
	}
	if win.deadline.Before(win.now.Add(win.dur)) {
		return unplaced(raw, fmt.Sprintf("cannot place: the deadline %s is sooner than now plus the duration %v", win.deadline.Format(time.RFC3339), win.dur))
	}
	if why := b.groupsUnplaced(); why != "" {
		return unplaced(raw, why)
	}
	mayWait := w.cfg.Bindings.Hold && !placeOnly // else it runs at once
	clusters := fed.Clusters()
	if !mayWait {
		clusters = takingNow(clusters, b.Spec.Placement)
	}
	cand := w.bindingCandidates(b.Spec.Placement, clusters)
	if len(cand.zones) == 0 {
		return unplaced(raw, cand.why)
	}
	d, err := w.schedule(ctx, sched, cand.zones, spec{Duration: win.dur.String(), Deadline: win.deadline.Format(time.RFC3339)})
	if err != nil {
		if userFault(err) {
			return unplaced(raw, "cannot place: "+forecast.ErrorMessage(err))
		}
		return unplaced(raw, w.failed(err, object{}).message)
	}
	key := hold.WorkloadKey(ns, b.Metadata.Name)
	m, ok := cand.in(d.Decision.Zone, key)
	if !ok {
		return unplaced(raw, fmt.Sprintf("carbongate chose zone %s, which is not a candidate", d.Decision.Zone))
	}
	var ws []weighted
	if b.divided() {
		var why string
		if ws, why = w.weigh(ctx, sched, b, key, cand, d, win.dur); why != "" {
			return unplaced(raw, why)
		}
	}
	dec := hold.Decision{Region: m.Region, Zone: string(d.Decision.Zone), Start: d.Decision.Start, ReleaseBy: win.deadline.Add(-win.dur)}
	a := dec.Annotations()
	if a[AnnotationProvenance], err = provenanceJSON(m.Region, d, requestID); err != nil {
		return unplaced(raw, "encoding the provenance: "+err.Error())
	}
	if ws == nil { // a run in one member: its power, for the promise and the ledger
		watts = w.bindingPower(a, b, m.Region, watts)
	} else {
		watts = 0 // divided: no promise in grams
	}
	promise(a, d, watts, win.dur)
	a[AnnotationCluster] = m.Name
	held := mayWait && !b.suspended()
	if ws == nil { // for a re-decision while held, and a failover (failover.go)
		if c := clusterCandidatesOf(cand, key); c != "" {
			a[hold.AnnotationCandidates] = c
		}
	}
	a[hold.AnnotationSignature] = w.cfg.Workloads.Signer.Sign(hold.Subject{Kind: BindingKind, Namespace: ns, Name: b.Metadata.Name}, a)
	if ws != nil {
		a[AnnotationWeights] = formatWeights(ws)
	}
	p, err := newRawPatch(raw)
	if err != nil {
		return deny(400, "request.object: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		p.set(a[k], "metadata", "annotations", k)
	}
	if ws != nil {
		divide(p, ws)
	} else {
		narrow(p, b, m.Name)
	}
	if held || mode == hold.ModeShadow { // shadowed makes it Shadow
		p.set(hold.Held, "metadata", "labels", hold.Label)
	}
	if held {
		p.set(true, hold.BindingSuspension...)
	}
	o := p.outcome()
	o.warnings = append(append(o.warnings, win.warnings...), cand.skipped...)
	if mode == hold.ModeShadow { // decided and annotated, neither narrowed nor held
		return shadowed(o)
	}
	return o
}

// bindingPower records on a, the annotations of binding b's decision
// for region, the power its workload declared (watts, copied: a binding
// does not carry its workload's annotations), else the one estimated from
// the requests of its replicas (signed, as for Jobs), and returns it; 0
// when there is neither.
func (w *Webhook) bindingPower(a map[string]string, b binding, region string, watts float64) float64 {
	if watts > 0 {
		a[hold.AnnotationPowerWatts] = strconv.FormatFloat(watts, 'f', -1, 64)
		return watts
	}
	var r struct {
		ResourceRequest corev1.ResourceList `json:"resourceRequest"`
	}
	if len(b.Spec.ReplicaRequirements) == 0 || json.Unmarshal(b.Spec.ReplicaRequirements, &r) != nil {
		return 0 // none to size it from (Karmada's schema refuses a bad quantity)
	}
	pod := &corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: r.ResourceRequest}}}}
	watts, ok := w.sizedPower(workload{pod: pod, pods: b.Spec.Replicas}, region)
	if !ok {
		return 0
	}
	a[hold.AnnotationEstimatedPower] = strconv.FormatFloat(watts, 'f', -1, 64)
	return watts
}

// clusterCandidatesOf are the member clusters of cand with their zones, as
// hold.AnnotationCandidates ("" when there is one cluster). Beyond
// hold.MaxCandidates members, each zone's is the one its binding key
// goes to (clusterCandidates.in), as hold.Find then gives it.
func clusterCandidatesOf(cand clusterCandidates, key string) string {
	var cs []hold.Candidate
	for _, z := range cand.zones {
		for _, m := range cand.members[z] {
			cs = append(cs, memberCandidate(z, m))
		}
	}
	if len(cs) > hold.MaxCandidates {
		cs = cs[:0]
		for _, z := range cand.zones {
			m, _ := cand.in(z, key)
			cs = append(cs, memberCandidate(z, m))
		}
	}
	return hold.FormatCandidates(cs)
}

// unplaced admits an object (a workload not held, a binding not placed)
// unchanged but for AnnotationUnscheduled saying why, with why as its
// warning.
func unplaced(raw []byte, why string) outcome {
	p, err := newRawPatch(raw)
	if err != nil {
		return deny(400, "request.object: %v", err)
	}
	p.set(forecast.Clip(why, maxWarning), "metadata", "annotations", AnnotationUnscheduled)
	o := p.outcome()
	o.message = why
	return o
}

// suspended reports whether the binding was created with its scheduling
// suspended (by its creator, not carbongate).
func (b binding) suspended() bool {
	s := b.Spec.Suspension
	return s != nil && s.Scheduling != nil && *s.Scheduling
}

// shadow reports whether the binding was decided in shadow mode
// (hold.AnnotationShadow): annotated only, never narrowed, divided, held
// or moved.
func (b binding) shadow() bool {
	return b.Metadata.Annotations[hold.AnnotationShadow] == "true"
}

// dispatchHeld reports whether the binding's dispatching is suspended.
func (b binding) dispatchHeld() bool {
	s := b.Spec.Suspension
	return s != nil && s.Dispatching != nil && *s.Dispatching
}

// narrowedTo reports whether the binding is placed on cluster as narrow
// places it: its clusterNames are [cluster], or its groups start with
// carbongate's of cluster.
func (b binding) narrowedTo(cluster string) bool {
	p := b.Spec.Placement
	if b.grouped() {
		return groupedTo(p.ClusterAffinities, cluster)
	}
	return p != nil && p.ClusterAffinity != nil && slices.Equal(p.ClusterAffinity.ClusterNames, []string{cluster})
}
