package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/carbongate/carbongate/gateway/hold"
)

// This file releases the Karmada ResourceBindings the webhook holds
// (hold.BindingSuspension) on a Karmada API server (Config.Federation):
// the same releaser as for Jobs and Pods — at the decided start or the
// deadline guard, exactly once (a patch conditioned on the
// resourceVersion), re-deciding while held — over a cache of that API
// server's held bindings. Leader election stays on the controller's own
// cluster: only the leader releases. Karmada's scheduler schedules the
// binding into the cluster its placement was narrowed to — at the
// release, or, with Config.ScheduleAhead, that long before it with the
// dispatch still held (hold.BindingDispatching) — and the workload
// appears there at the release. With the ledger (Config.Observed) the
// released bindings of Jobs are cached too and accounted like Jobs
// (bindingRecorder, ledger.go).

// bindingGVK is Karmada's ResourceBinding.
var bindingGVK = schema.GroupVersionKind{Group: hold.BindingGroup, Version: hold.BindingVersion, Kind: hold.BindingKind}

func newCluster() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterGVK)
	return u
}

func newBinding() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(bindingGVK)
	return u
}

// bindingReleaser releases held bindings; staged ahead by lead (wall
// time; 0: not staged), a binding is scheduled with its dispatching held
// (hold.BindingDispatching) and its release only dispatches it.
func bindingReleaser(lead time.Duration) *releaser {
	return &releaser{kind: "resourcebinding", newObj: func() client.Object { return newBinding() },
		held: func(o client.Object) bool {
			return suspended(o, hold.BindingSuspension) || suspended(o, hold.BindingDispatching)
		},
		release: func(o client.Object) {
			suspend(o, hold.BindingSuspension, false)
			suspend(o, hold.BindingDispatching, false)
		},
		cannotTake: memberCannotTake,
		place:      bindingPlacer(),
		stage: func(o client.Object) bool {
			if !suspended(o, hold.BindingSuspension) {
				return false
			}
			suspend(o, hold.BindingSuspension, false)
			suspend(o, hold.BindingDispatching, true)
			return true
		},
		lead: lead,
	}
}

// suspended reports whether binding o's suspension at path is true.
func suspended(o client.Object, path []string) bool {
	v, ok, err := unstructured.NestedBool(o.(*unstructured.Unstructured).Object, path...)
	return ok && err == nil && v
}

// suspend sets binding o's suspension at path to v.
func suspend(o client.Object, path []string, v bool) {
	// Cannot fail: the object is a map and the path holds maps.
	_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, v, path...)
}

// clusterGVK is Karmada's Cluster.
var clusterGVK = schema.GroupVersionKind{Group: "cluster.karmada.io", Version: "v1alpha1", Kind: "Cluster"}

// memberCannotTake says, after a binding's release, why the member
// clusters it was placed in cannot take it now — not Ready, or a taint its
// clusterTolerations do not tolerate (Karmada taints NotReady and
// unreachable members so): NoSchedule or NoExecute while Karmada has yet
// to schedule it, NoExecute only in a member it was scheduled to (staged
// ahead: a NoSchedule taint does not move what is scheduled, as for pods
// on nodes) — "" when one can or carbongate did not narrow it.
func memberCannotTake(ctx context.Context, r client.Reader, obj client.Object) (unavailable, error) {
	var b struct {
		Spec struct {
			Placement struct {
				ClusterAffinity struct {
					ClusterNames []string `json:"clusterNames"`
				} `json:"clusterAffinity"`
				ClusterTolerations []corev1.Toleration `json:"clusterTolerations"`
			} `json:"placement"`
			Clusters []targetCluster `json:"clusters"`
		} `json:"spec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, &b); err != nil {
		return unavailable{}, fmt.Errorf("reading the binding's placement: %w", err)
	}
	names, tolerations := b.Spec.Placement.ClusterAffinity.ClusterNames, b.Spec.Placement.ClusterTolerations
	if obj.GetAnnotations()[hold.AnnotationCluster] == "" || len(names) == 0 {
		return unavailable{}, nil
	}
	var reasons []string
	scheduled := len(b.Spec.Clusters) > 0
	for _, name := range names {
		c := newCluster()
		if err := r.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			reasons = append(reasons, name+": "+err.Error())
			continue
		}
		in := slices.ContainsFunc(b.Spec.Clusters, func(t targetCluster) bool { return t.Name == name })
		why := clusterBlocked(c, tolerations, in)
		if why == "" {
			return unavailable{}, nil
		}
		reasons = append(reasons, name+": "+why)
	}
	then := "Karmada leaves the binding unscheduled until it can (its Scheduled condition says why)"
	if scheduled {
		then = "scheduled there ahead of its release, Karmada dispatches it once the member can take it (its Works' Applied condition says why not yet)"
	}
	members, why := strings.Join(names, ", "), strings.Join(reasons, "; ")
	return unavailable{now: fmt.Sprintf("member cluster %s cannot take it now (%s)", members, why),
		released: fmt.Sprintf("released to member cluster %s, which cannot take it now (%s): %s", members, why, then)}, nil
}

// targetCluster is a cluster Karmada's scheduler put a binding in
// (spec.clusters).
type targetCluster struct {
	Name string `json:"name"`
}

// clusterBlocked says why Cluster c takes no binding with tolerations
// now, "" when it does; scheduled: the binding is scheduled to c already,
// where only NoExecute taints keep it off.
func clusterBlocked(c *unstructured.Unstructured, tolerations []corev1.Toleration, scheduled bool) string {
	var cl struct {
		Spec struct {
			Taints []corev1.Taint `json:"taints"`
		} `json:"spec"`
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.Object, &cl); err != nil {
		return "unreadable: " + err.Error()
	}
	if !meta.IsStatusConditionTrue(cl.Status.Conditions, "Ready") {
		return "not Ready"
	}
	filter := blocks
	if scheduled {
		filter = func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }
	}
	if t, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), cl.Spec.Taints, tolerations, filter, false); untolerated {
		return fmt.Sprintf("taint %s:%s", t.Key, t.Effect)
	}
	return ""
}

// addFederation adds the Karmada API server of cfg to the manager (its
// cache of held bindings runs on every replica) and the binding releaser
// to the leader's reconcilers, acting with d on that API server.
func (c *Controller) addFederation(cfg *rest.Config, scheme *runtime.Scheme, d deps) error {
	ledgered := c.cfg.Observed != nil
	held, err := watched(ledgered)
	if err != nil {
		return err
	}
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = c.mgr.GetLogger().WithName("karmada")
		o.Cache = cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         map[client.Object]cache.ByObject{newBinding(): {Label: held}, newCluster(): {}},
		}
		// Bindings are unstructured: read them from the cache too.
		o.Client.Cache = &client.CacheOptions{Unstructured: true}
	})
	if err != nil {
		return fmt.Errorf("controller: Karmada API server: %w", err)
	}
	if err := c.mgr.Add(cl); err != nil {
		return fmt.Errorf("controller: Karmada API server: %w", err)
	}
	r := bindingReleaser(c.cfg.ScheduleAhead)
	// The release's check reads the member Clusters from the cache.
	d.client, d.nodes = cl.GetClient(), cl.GetCache()
	//lint:ignore SA1019 the core/v1 recorder, as for the controller's own cluster (setup)
	d.events = cl.GetEventRecorderFor("carbongate")
	r.deps, r.redecider = d, c.redecider()
	if err := ctrl.NewControllerManagedBy(c.mgr).Named("hold-" + r.kind).
		WatchesRawSource(source.Kind(cl.GetCache(), client.Object(newBinding()), &handler.EnqueueRequestForObject{})).
		WithOptions(ctrlOptions(c.cfg.Workers)).Complete(r); err != nil {
		return err
	}
	if !ledgered {
		return nil
	}
	rec := c.equip(bindingRecorder(), d)
	return ctrl.NewControllerManagedBy(c.mgr).Named("ledger-" + rec.kind).
		WatchesRawSource(source.Kind(cl.GetCache(), client.Object(newBinding()), &handler.EnqueueRequestForObject{}, rec.accounted())).
		WithOptions(ctrlOptions(c.cfg.Workers)).Complete(rec)
}
