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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold"
)

// Defaults of Workloads.
const (
	DefaultWorkloadDuration = time.Hour
	DefaultMaxDelay         = 24 * time.Hour
)

// Workloads configures the holding of batch/v1 Jobs and bare Pods (see
// package hold). Without a Cluster they are admitted unchanged.
type Workloads struct {
	Cluster hold.Cluster
	// Provider is the cloud provider whose region names the nodes carry;
	// "": the first provider (in regions.Providers order) that has the
	// name.
	Provider string
	// Region is the cluster's own region, the only candidate when no node
	// carries a region label; "": such workloads are admitted unheld.
	Region string
	// Duration is the run time of a workload that states none; default
	// DefaultWorkloadDuration.
	Duration time.Duration
	// MaxDelay bounds the wait of a workload without a deadline in a
	// namespace without hold.AnnotationMaxDelay; default DefaultMaxDelay.
	MaxDelay time.Duration
	// Now is the gateway's clock; required with Cluster.
	Now func() time.Time
	// Signer signs each decision (hold.AnnotationSignature) for the
	// controller to verify; required with Cluster.
	Signer *hold.Signer
	// Shadow makes shadow mode (shadow.go) the default of namespaces
	// without hold.NamespaceModeLabel.
	Shadow bool
}

// workload is a Job or a bare Pod under admission: its metadata and the
// pod spec the decision pins.
type workload struct {
	meta     *metav1.ObjectMeta
	pod      *corev1.PodSpec
	podPath  []string          // where pod is in the object
	hold     func(p *rawPatch) // suspends the Job or gates the Pod
	eligible func() string     // "" or why the object is not held
	runFor   *int64            // spec.activeDeadlineSeconds
	// movable: the controller may move the pinned region while the
	// workload is held (a suspended Job's pod template node affinity is
	// mutable until it starts; a gated Pod's may only be narrowed).
	movable bool
	// pods is how many of its pods run at once: a Job's parallelism
	// (within its completions), a Pod's 1.
	pods int32
	// key is what it is spread by over the regions of a zone
	// (candidates.rep): its namespace and name, or, created with
	// generateName (no name yet), that and the admission request's UID.
	key string
}

// decideWorkload holds a Job or bare Pod that opted in (see package hold).
// Anything carbongate cannot decide or place (no candidate region, a
// deadline too soon, a run longer than the forecast horizon, the gateway
// unavailable) admits the workload unheld with the unscheduled annotation
// saying why: carbongate never blocks a workload. Only a malformed object
// or an annotation that does not parse is denied with 400, naming it.
func (w *Webhook) decideWorkload(ctx context.Context, req *admissionv1.AdmissionRequest, requestID string, sched Scheduler) outcome {
	wc := w.cfg.Workloads
	if wc.Cluster == nil || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return allow()
	}
	// Most Pods and Jobs of a cluster are not held: metadata decides first.
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &meta); err != nil {
		return deny(400, "request.object: %v", err)
	}
	// An UPDATE keeps the decision it had: sanitized (strip.go) put back
	// what it dropped of the hold label and the outputs.
	if req.Operation == admissionv1.Update {
		return allow()
	}
	nsLabels, nsAnnotations, _ := wc.Cluster.Namespace(req.Namespace)
	if _, annotated := meta.Annotations[hold.AnnotationDeadline]; !annotated && !namespaceOptedIn(nsLabels) {
		return allow()
	}
	wl, err := decodeWorkload(req.Kind.Kind, req.Object.Raw)
	if err != nil {
		return deny(400, "request.object: %v", err)
	}
	if why := wl.eligible(); why != "" {
		return allow()
	}
	win, bad := w.workloadWindow(wl, req.Namespace, nsAnnotations, wc.Now().UTC())
	if bad != "" {
		return deny(400, "%s", bad)
	}
	watts, bad := powerOf(wl.meta)
	if bad != "" {
		return deny(400, "%s", bad)
	}
	mode, warning := w.mode(req.Namespace, nsLabels)
	subject := hold.Subject{Kind: req.Kind.Kind, Namespace: req.Namespace, Name: wl.meta.Name, GenerateName: wl.meta.GenerateName}
	wl.key = hold.WorkloadKey(req.Namespace, cmp.Or(wl.meta.Name, wl.meta.GenerateName+string(req.UID)))
	o := w.placeWorkload(ctx, req.Object.Raw, wl, subject, win, watts, requestID, sched)
	o.warnings = append(o.warnings, win.warnings...)
	if warning != "" {
		o.warnings = append(o.warnings, warning)
	}
	w.wl.count(req, mode, o)
	if mode == hold.ModeShadow {
		return shadowed(o)
	}
	return o
}

// placeWorkload holds wl for the decision over its candidate regions, its
// decision signed for subject, or admits it unheld saying why.
func (w *Webhook) placeWorkload(ctx context.Context, raw []byte, wl workload, subject hold.Subject, win window, watts float64, requestID string, sched Scheduler) outcome {
	if win.runNow != "" {
		o := unplaced(raw, win.runNow)
		o.message = "" // not a failure: no warning
		return o
	}
	dur, deadline := win.dur, win.deadline
	if deadline.Before(win.now.Add(dur)) {
		return unplaced(raw, fmt.Sprintf("cannot place: the deadline %s is sooner than now (%s) plus the duration %v", deadline.Format(time.RFC3339), win.now.Format(time.RFC3339), dur))
	}
	cand := w.workloadCandidates(wl.pod)
	if len(cand.zones) == 0 {
		return unplaced(raw, cand.why)
	}
	s := spec{Duration: dur.String(), Deadline: deadline.Format(time.RFC3339)}
	if z := w.zoneOf(w.cfg.Workloads.Region); z != "" && slices.Contains(cand.zones, z) {
		s.Origin = string(z) // run now here is the baseline
	}
	d, err := w.schedule(ctx, sched, cand.zones, s)
	if err != nil {
		if userFault(err) { // e.g. longer than the forecast horizon
			return unplaced(raw, "cannot place: "+forecast.ErrorMessage(err))
		}
		return unplaced(raw, w.failed(err, object{}).message)
	}
	region := cand.rep(d.Decision.Zone, wl.key)
	estimated := false
	if watts == 0 {
		watts, estimated = w.sizedPower(wl, region)
	}
	dec := hold.Decision{Region: region, Zone: string(d.Decision.Zone), Start: d.Decision.Start, ReleaseBy: deadline.Add(-dur)}
	prov, err := provenanceJSON(region, d, requestID)
	if err != nil {
		return unplaced(raw, "encoding the provenance: "+err.Error())
	}
	p, err := newRawPatch(raw)
	if err != nil {
		return deny(400, "request.object: %v", err)
	}
	p.set(hold.Held, "metadata", "labels", hold.Label)
	a := dec.Annotations()
	a[AnnotationProvenance] = prov
	if estimated {
		a[hold.AnnotationEstimatedPower] = strconv.FormatFloat(watts, 'f', -1, 64)
	}
	promise(a, d, watts, dur)
	pinned := len(cand.regions) > 1 && region != ""
	if pinned && wl.movable {
		if c := regionCandidates(cand, wl.key); c != "" {
			a[hold.AnnotationCandidates] = c
		}
	}
	a[hold.AnnotationSignature] = w.cfg.Workloads.Signer.Sign(subject, a)
	for _, k := range slices.Sorted(maps.Keys(a)) {
		p.set(a[k], "metadata", "annotations", k)
	}
	if pinned {
		pin(p, wl, region)
	}
	wl.hold(p)
	return p.outcome()
}

// regionCandidates are the zones of cand with the region each pins the
// workload key to (candidates.rep), as hold.AnnotationCandidates ("" when
// there is one zone).
func regionCandidates(cand candidates, key string) string {
	cs := make([]hold.Candidate, 0, len(cand.zones))
	for _, z := range cand.zones {
		cs = append(cs, hold.Candidate{Zone: string(z), Region: cand.rep(z, key)})
	}
	return hold.FormatCandidates(cs)
}

// MaxPowerWatts bounds hold.AnnotationPowerWatts: a rack's worth.
const MaxPowerWatts = hold.MaxPowerWatts

// powerOf reads the workload's declared power (0 when absent), or a
// message naming the annotation.
func powerOf(m *metav1.ObjectMeta) (float64, string) {
	v, ok := m.Annotations[hold.AnnotationPowerWatts]
	if !ok {
		return 0, ""
	}
	w, err := strconv.ParseFloat(v, 64)
	if err != nil || !(w > 0 && w <= MaxPowerWatts) {
		return 0, fmt.Sprintf("metadata.annotations[%s]: %q is not a power in watts in (0, %d]", hold.AnnotationPowerWatts, v, MaxPowerWatts)
	}
	return w, ""
}

// decodeWorkload reads a Job or a Pod.
func decodeWorkload(kind string, raw []byte) (workload, error) {
	switch kind {
	case "Job":
		var j batchv1.Job
		if err := json.Unmarshal(raw, &j); err != nil {
			return workload{}, fmt.Errorf("not a batch/v1 Job: %v", err)
		}
		return workload{meta: &j.ObjectMeta, pod: &j.Spec.Template.Spec, podPath: []string{"spec", "template", "spec"}, runFor: j.Spec.ActiveDeadlineSeconds,
			movable: true, pods: jobPods(j.Spec),
			hold: func(p *rawPatch) { p.set(true, "spec", "suspend") },
			eligible: func() string {
				if j.Spec.Suspend != nil && *j.Spec.Suspend {
					return "created suspended: its creator releases it"
				}
				return ""
			}}, nil
	case "Pod":
		var p corev1.Pod
		if err := json.Unmarshal(raw, &p); err != nil {
			return workload{}, fmt.Errorf("not a v1 Pod: %v", err)
		}
		return workload{meta: &p.ObjectMeta, pod: &p.Spec, podPath: []string{"spec"}, runFor: p.Spec.ActiveDeadlineSeconds, pods: 1,
			hold: func(rp *rawPatch) { rp.appendTo(corev1.PodSchedulingGate{Name: hold.Gate}, "spec", "schedulingGates") },
			eligible: func() string {
				switch {
				case metav1.GetControllerOf(&p) != nil:
					return "owned by a controller (its Job or workload is held instead)"
				case p.Spec.NodeName != "":
					return "already bound to a node"
				}
				return ""
			}}, nil
	}
	return workload{}, fmt.Errorf("kind %s is not held", kind)
}

// window is when a workload may run.
type window struct {
	now      time.Time
	dur      time.Duration
	deadline time.Time
	runNow   string   // why it runs at once, unheld: its namespace allows no delay
	warnings []string // about the namespace's annotations, which its creator may not own
}

// workloadWindow returns how long wl runs and by when it must finish, or
// a message naming the bad annotation of wl. The namespace's max delay,
// when invalid, is the configured default, with a warning and a log line.
func (w *Webhook) workloadWindow(wl workload, ns string, nsAnnotations map[string]string, now time.Time) (window, string) {
	wc := w.cfg.Workloads
	win := window{now: now, dur: wc.Duration}
	if v, ok := wl.meta.Annotations[hold.AnnotationDuration]; ok {
		d, err := gateway.ParseDuration(v)
		if err != nil || d <= 0 {
			return window{}, fmt.Sprintf("metadata.annotations[%s]: %q is not a positive ISO 8601 (PT3H) or Go (3h) duration", hold.AnnotationDuration, v)
		}
		win.dur = d
	} else if wl.runFor != nil && *wl.runFor > 0 {
		win.dur = time.Duration(*wl.runFor) * time.Second
	}
	if v, ok := wl.meta.Annotations[hold.AnnotationDeadline]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return window{}, fmt.Sprintf("metadata.annotations[%s]: %q is not an RFC 3339 time like 2021-06-03T00:00:00Z", hold.AnnotationDeadline, v)
		}
		win.deadline = t.UTC()
		return win, ""
	}
	delay := wc.MaxDelay
	if v, ok := nsAnnotations[hold.AnnotationMaxDelay]; ok {
		d, err := gateway.ParseDuration(v)
		switch {
		case err != nil || d < 0:
			msg := fmt.Sprintf("namespace %s: annotation %s %q is not a duration of zero or more (ISO 8601 like PT6H, or Go like 6h): the default %v applies", ns, hold.AnnotationMaxDelay, forecast.Clip(v, 64), wc.MaxDelay)
			w.cfg.Logger.Warn("admission: invalid namespace max delay", "namespace", ns, "value", forecast.Clip(v, 64), "default", wc.MaxDelay.String())
			win.warnings = append(win.warnings, msg)
		case d == 0:
			win.runNow = fmt.Sprintf("namespace %s: %s is %s: runs at once", ns, hold.AnnotationMaxDelay, v)
		default:
			delay = d
		}
	}
	win.deadline = now.Add(delay + win.dur)
	return win, ""
}

// zoneOf returns the grid zone of a region name of the cluster's provider.
func (w *Webhook) zoneOf(name string) forecast.Zone {
	_, r, _ := w.regionNamed(name)
	return r.Zone
}

// regionNamed returns the region of the cluster's provider named name and
// that provider: the configured provider's, else the first provider's (in
// regions.Providers order) that has the name.
func (w *Webhook) regionNamed(name string) (provider string, r Region, ok bool) {
	providers := regions.Providers()
	if p := w.cfg.Workloads.Provider; p != "" {
		providers = []string{p}
	}
	for _, p := range providers {
		for _, r := range w.cfg.Data.Regions(p) {
			if r.Name == name {
				return p, r, true
			}
		}
	}
	return "", Region{}, false
}

// pin ANDs "node region In [region]" into the required node affinity of
// wl's pods (into every term: terms are ORed), adding what is absent.
func pin(p *rawPatch, wl workload, region string) {
	req := corev1.NodeSelectorRequirement{Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{region}}
	terms := append(slices.Clone(wl.podPath), "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	var n int
	if a := wl.pod.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		n = len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	}
	if n == 0 {
		p.set([]corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}}, terms...)
		return
	}
	for i := range n {
		p.appendTo(req, append(slices.Clone(terms), strconv.Itoa(i), "matchExpressions")...)
	}
}
