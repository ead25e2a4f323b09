package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
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
// cluster: only the leader releases. Karmada's scheduler then schedules
// the binding into the cluster its placement was narrowed to; the
// workload appears there.

// bindingGVK is Karmada's ResourceBinding.
var bindingGVK = schema.GroupVersionKind{Group: hold.BindingGroup, Version: hold.BindingVersion, Kind: hold.BindingKind}

func newBinding() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(bindingGVK)
	return u
}

func bindingReleaser() *releaser {
	return &releaser{kind: "resourcebinding", newObj: func() client.Object { return newBinding() },
		held: func(o client.Object) bool {
			v, ok, err := unstructured.NestedBool(o.(*unstructured.Unstructured).Object, hold.BindingSuspension...)
			return ok && err == nil && v
		},
		release: func(o client.Object) {
			// Cannot fail: the object is a map and the path holds maps.
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, false, hold.BindingSuspension...)
		},
		// A binding has no pod spec here; with no node reader the
		// Unplaceable check, which reads it, does not run.
		spec: func(client.Object) *corev1.PodSpec { return nil },
	}
}

// addFederation adds the Karmada API server of cfg to the manager (its
// cache of held bindings runs on every replica) and the binding releaser
// to the leader's reconcilers, acting with d on that API server.
func (c *Controller) addFederation(cfg *rest.Config, scheme *runtime.Scheme, d deps) error {
	held, err := watched(false)
	if err != nil {
		return err
	}
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		o.Logger = c.mgr.GetLogger().WithName("karmada")
		o.Cache = cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         map[client.Object]cache.ByObject{newBinding(): {Label: held}},
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
	r := bindingReleaser()
	d.client, d.nodes = cl.GetClient(), nil
	//lint:ignore SA1019 the core/v1 recorder, as for the controller's own cluster (setup)
	d.events = cl.GetEventRecorderFor("carbongate")
	r.deps, r.redecider = d, c.redecider()
	return ctrl.NewControllerManagedBy(c.mgr).Named("hold-" + r.kind).
		WatchesRawSource(source.Kind(cl.GetCache(), client.Object(newBinding()), &handler.EnqueueRequestForObject{})).
		WithOptions(ctrlOptions(c.cfg.Workers)).Complete(r)
}
