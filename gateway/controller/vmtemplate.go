package controller

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

// VmTemplate phases (status.phase): v1alpha1's.
const (
	PhasePending     = v1alpha1.PhasePending
	PhaseScheduled   = v1alpha1.PhaseScheduled
	PhaseReleased    = v1alpha1.PhaseReleased
	PhaseProvisioned = v1alpha1.PhaseProvisioned
	PhaseExpired     = v1alpha1.PhaseExpired
	PhaseFailed      = v1alpha1.PhaseFailed
)

// TemplatePrefix names the ConfigMap holding a provider's object template
// in the VmTemplate's namespace: carbongate-vm-<provider>, key TemplateKey.
const (
	TemplatePrefix = "carbongate-vm-"
	TemplateKey    = "template.yaml"
)

// Polling of a released template's object for readiness and retries of a
// failed creation, in wall time.
const (
	trackEvery = 10 * time.Second
	retryEvery = 15 * time.Second
)

// vmStatus is a VmTemplate's status subresource.
type vmStatus = v1alpha1.VmTemplateStatus

// vmReconciler moves VmTemplates through their phases.
type vmReconciler struct {
	retries backoff
	kinds   VMKinds // what each provider's template may render
	client  client.Client
	reader  client.Reader // uncached: ConfigMaps and providers' objects
	clock   clock.Clock
	events  record.EventRecorder
	metrics *metrics
	log     *slog.Logger
}

func (r *vmReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read from the API server, not the cache: a reconcile never acts on
	// a status older than its own last write.
	vm := &v1alpha1.VmTemplate{}
	if err := r.reader.Get(ctx, req.NamespacedName, vm); err != nil {
		r.metrics.forget("vmtemplate", req.String())
		if apierrors.IsNotFound(err) {
			r.retries.reset(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vm.GetDeletionTimestamp().IsZero() {
		r.metrics.forget("vmtemplate", req.String())
		return ctrl.Result{}, nil
	}
	st := *vm.Status.DeepCopy()
	switch st.Phase {
	case PhaseProvisioned, PhaseExpired:
		return ctrl.Result{}, nil
	case PhaseReleased:
		return r.track(ctx, vm, st)
	}
	spec := &vm.Spec
	now := r.clock.Now()
	region, reason := deref(spec.SchedulingRegion), hold.ReasonScheduled
	start, err := time.Parse(time.RFC3339, deref(spec.SchedulingTime))
	if region == "" || err != nil { // not scheduled (the webhook failed open, or none runs): released now, in the origin
		region, start, reason = spec.OriginRegion, now, "unscheduled"
	}
	at := start
	var deadline time.Time
	if dl, err := time.Parse(time.RFC3339, deref(spec.Deadline)); err == nil {
		deadline = dl
		if dur, err := gateway.ParseDuration(spec.Duration); err == nil && dl.Add(-dur).Before(at) {
			at, reason = dl.Add(-dur), hold.ReasonGuard
		}
	}
	st.Region, st.Start, st.ReleaseAt = region, start.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339)
	st.Zone, st.SavingsPct = provenanceOf(vm)
	if now.Before(at) {
		if st.Phase != PhaseScheduled {
			st.Phase, st.Message = PhaseScheduled, "waiting for "+st.ReleaseAt
			r.events.Eventf(vm, corev1.EventTypeNormal, "Scheduled", "held until %s, then created in %s", st.ReleaseAt, region)
			if err := r.writeStatus(ctx, vm, st); err != nil {
				return ctrl.Result{}, err
			}
		}
		r.metrics.hold("vmtemplate", req.String())
		return ctrl.Result{RequeueAfter: clock.Wall(r.clock, at.Sub(now))}, nil
	}
	if !deadline.IsZero() && now.After(deadline) {
		st.Phase, st.Message = PhaseExpired, "its deadline "+deadline.UTC().Format(time.RFC3339)+" passed before it was released"
		r.events.Eventf(vm, corev1.EventTypeWarning, "Expired", "%s", st.Message)
		r.metrics.released("vmtemplate", "expired", -1)
		r.metrics.forget("vmtemplate", req.String())
		return ctrl.Result{}, r.writeStatus(ctx, vm, st)
	}
	return r.create(ctx, vm, st, reason, now, at)
}

// deref returns *p, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// create makes the provider's object from its template and records it.
func (r *vmReconciler) create(ctx context.Context, vm *v1alpha1.VmTemplate, st vmStatus, reason string, now, at time.Time) (ctrl.Result, error) {
	obj, err := r.render(ctx, vm, st)
	if err == nil {
		err = r.client.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			err = r.adopted(ctx, vm, obj)
		}
	}
	key := client.ObjectKeyFromObject(vm).String()
	if err != nil {
		// The same failure again (the template still missing, say) is not
		// written or announced again, and is retried less and less often.
		if st.Phase != PhaseFailed || st.Message != err.Error() {
			st.Phase, st.Message = PhaseFailed, err.Error()
			r.events.Eventf(vm, corev1.EventTypeWarning, "Failed", "%s", err.Error())
			if werr := r.writeStatus(ctx, vm, st); werr != nil {
				return ctrl.Result{}, werr
			}
		}
		return ctrl.Result{RequeueAfter: r.retries.next(key)}, nil
	}
	r.retries.reset(key)
	st.Phase, st.Message, st.ReleasedAt = PhaseReleased, "created "+obj.GetKind()+" "+obj.GetName(), now.UTC().Format(time.RFC3339)
	st.Resource = &v1alpha1.ResourceRef{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName()}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: "Released", Status: metav1.ConditionTrue, Reason: conditionReason(reason), Message: st.Message})
	lag := clock.Wall(r.clock, now.Sub(at))
	r.metrics.released("vmtemplate", reason, lag)
	r.metrics.forget("vmtemplate", client.ObjectKeyFromObject(vm).String())
	r.events.Eventf(vm, corev1.EventTypeNormal, "Released", "created %s %s in %s (%s)", obj.GetKind(), obj.GetName(), st.Region, reason)
	r.log.Info("released", "kind", "vmtemplate", "namespace", vm.GetNamespace(), "name", vm.GetName(), "reason", reason, "lag", lag.String(), "resource", obj.GetKind())
	if err := r.writeStatus(ctx, vm, st); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: trackEvery}, nil
}

// backoff spaces the retries of each failing VmTemplate: retryEvery,
// doubling up to retryMax.
type backoff struct {
	mu    sync.Mutex
	fails map[string]int
}

const retryMax = 16 * retryEvery

func (b *backoff) next(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fails == nil {
		b.fails = map[string]int{}
	}
	n := b.fails[key]
	b.fails[key] = n + 1
	return min(retryEvery<<min(n, 5), retryMax)
}

func (b *backoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.fails, key)
}

// templateData is what a provider template sees. Spec is the VmTemplate's
// spec by its JSON names ({{ .Spec.minCPU }}), as the API server stores it.
type templateData struct {
	Name, Namespace, Provider, Region, Zone, Start string
	Spec                                           map[string]any
}

// render executes the provider's template for vm.
func (r *vmReconciler) render(ctx context.Context, vm *v1alpha1.VmTemplate, st vmStatus) (*unstructured.Unstructured, error) {
	provider := cmp.Or(deref(vm.Spec.Provider), v1alpha1.DefaultProvider)
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&vm.Spec)
	if err != nil {
		return nil, fmt.Errorf("reading spec: %v", err)
	}
	cm := &corev1.ConfigMap{}
	name := TemplatePrefix + provider
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: vm.GetNamespace(), Name: name}, cm); err != nil {
		return nil, fmt.Errorf("the provider template ConfigMap %s/%s: %v", vm.GetNamespace(), name, err)
	}
	text, ok := cm.Data[TemplateKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s has no key %s", name, TemplateKey)
	}
	tmpl, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s: %s: %v", name, TemplateKey, err)
	}
	var buf bytes.Buffer
	data := templateData{Name: vm.GetName(), Namespace: vm.GetNamespace(), Provider: provider, Region: st.Region, Zone: st.Zone, Start: st.Start, Spec: spec}
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: executing %s: %v", name, TemplateKey, err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(buf.Bytes(), &obj.Object); err != nil || obj.GetKind() == "" || obj.GetAPIVersion() == "" {
		return nil, fmt.Errorf("ConfigMap %s: %s does not render to one object with apiVersion and kind (%v)", name, TemplateKey, err)
	}
	if err := r.kinds.check(provider, obj.GroupVersionKind().GroupKind()); err != nil {
		return nil, fmt.Errorf("ConfigMap %s: %s %w", name, TemplateKey, err)
	}
	obj.SetNamespace(vm.GetNamespace())
	if obj.GetName() == "" {
		obj.SetName(vm.GetName())
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(vm, v1alpha1.GroupVersionKind)})
	return obj, nil
}

// adopted checks that an existing object of obj's name is vm's (created by
// an earlier attempt whose status write was lost).
func (r *vmReconciler) adopted(ctx context.Context, vm *v1alpha1.VmTemplate, obj *unstructured.Unstructured) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return err
	}
	if metav1.IsControlledBy(cur, vm) {
		return nil
	}
	return fmt.Errorf("%s %s exists and is not this VmTemplate's", obj.GetKind(), obj.GetName())
}

// track mirrors the provider object's Ready condition.
func (r *vmReconciler) track(ctx context.Context, vm *v1alpha1.VmTemplate, st vmStatus) (ctrl.Result, error) {
	if st.Resource == nil {
		return ctrl.Result{}, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(st.Resource.APIVersion)
	obj.SetKind(st.Resource.Kind)
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: vm.GetNamespace(), Name: st.Resource.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		st.Phase, st.Message = PhaseFailed, fmt.Sprintf("%s %s was deleted", st.Resource.Kind, st.Resource.Name)
		r.events.Eventf(vm, corev1.EventTypeWarning, "Failed", "%s", st.Message)
		return ctrl.Result{}, r.writeStatus(ctx, vm, st)
	case err != nil:
		return ctrl.Result{}, err
	}
	ready := readyCondition(obj)
	if ready == nil {
		return ctrl.Result{RequeueAfter: trackEvery}, nil
	}
	ready.Type, ready.ObservedGeneration = "Ready", vm.GetGeneration()
	ready.Reason = conditionReason(ready.Reason)
	changed := meta.SetStatusCondition(&st.Conditions, *ready)
	if ready.Status == metav1.ConditionTrue {
		st.Phase, st.Message = PhaseProvisioned, fmt.Sprintf("%s %s is ready", st.Resource.Kind, st.Resource.Name)
		r.events.Eventf(vm, corev1.EventTypeNormal, "Provisioned", "%s", st.Message)
		return ctrl.Result{}, r.writeStatus(ctx, vm, st)
	}
	if changed {
		if err := r.writeStatus(ctx, vm, st); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: trackEvery}, nil
}

// readyCondition returns obj's status.conditions[type=Ready], if any.
func readyCondition(obj *unstructured.Unstructured) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		s, _ := m["status"].(string)
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return &metav1.Condition{Status: metav1.ConditionStatus(s), Reason: cmp.Or(reason, "ProviderReported"), Message: msg}
	}
	return nil
}

// conditionReason makes s a valid condition reason (CamelCase, letters).
func conditionReason(s string) string {
	out := make([]byte, 0, len(s))
	upper := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if upper && c >= 'a' {
				c -= 'a' - 'A'
			}
			out, upper = append(out, c), false
		default:
			upper = true
		}
	}
	return cmp.Or(string(out), "Unknown")
}

// provenanceOf reads the zone and saving the webhook annotated.
func provenanceOf(vm *v1alpha1.VmTemplate) (string, *float64) {
	var p v1alpha1.Provenance
	if json.Unmarshal([]byte(vm.Annotations[v1alpha1.AnnotationProvenance]), &p) != nil {
		return "", nil
	}
	if p.SavingsPct != nil {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(*p.SavingsPct, 'f', 1, 64), 64)
		p.SavingsPct = &v
	}
	return p.Zone, p.SavingsPct
}

// writeStatus replaces vm's status with st (conflicts are retried by the
// work queue).
func (r *vmReconciler) writeStatus(ctx context.Context, vm *v1alpha1.VmTemplate, st vmStatus) error {
	vm.Status = st
	return r.client.Status().Update(ctx, vm)
}
