// Package karmada is carbongate's view of a Karmada control plane
// (hold.Federation) for the admission webhook that places its
// ResourceBindings: the member clusters (cluster.karmada.io/v1alpha1
// Clusters) and namespaces, cached by informers, and the annotations of
// the workloads its bindings propagate, read from its API server on
// demand (a binding does not carry them).
package karmada

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/carbongate/carbongate/gateway/hold"
)

// ClusterResource is Karmada's Cluster resource.
var ClusterResource = schema.GroupVersionResource{Group: "cluster.karmada.io", Version: "v1alpha1", Resource: "clusters"}

// resync is the informers' resync period: none, they watch.
const resync = 0

// View implements hold.Federation over a Karmada API server. Its methods
// are safe for concurrent use once Start has returned.
type View struct {
	dyn        dynamic.Interface
	mapper     *restmapper.DeferredDiscoveryRESTMapper
	clusterInf dynamicinformer.DynamicSharedInformerFactory
	nsInf      informers.SharedInformerFactory
	clusters   cache.GenericLister
	namespaces listersv1.NamespaceLister
}

var _ hold.Federation = (*View)(nil)

// New builds a View of the Karmada API server cfg points at; it does not
// contact it (Start does).
func New(cfg *rest.Config) (*View, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("karmada: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("karmada: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("karmada: %w", err)
	}
	v := &View{
		dyn:        dyn,
		mapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		clusterInf: dynamicinformer.NewDynamicSharedInformerFactory(dyn, resync),
		nsInf:      informers.NewSharedInformerFactory(kube, resync),
	}
	v.clusters = v.clusterInf.ForResource(ClusterResource).Lister()
	v.namespaces = v.nsInf.Core().V1().Namespaces().Lister()
	return v, nil
}

// Start runs the informers until ctx ends and waits, at most timeout,
// for their first list.
func (v *View) Start(ctx context.Context, timeout time.Duration) error {
	v.clusterInf.Start(ctx.Done())
	v.nsInf.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for r, ok := range v.clusterInf.WaitForCacheSync(wait.Done()) {
		if !ok {
			return fmt.Errorf("karmada: listing %s did not complete within %v", r.Resource, timeout)
		}
	}
	for _, ok := range v.nsInf.WaitForCacheSync(wait.Done()) {
		if !ok {
			return fmt.Errorf("karmada: listing namespaces did not complete within %v", timeout)
		}
	}
	return nil
}

// clusterObject is what is read of a Cluster.
type clusterObject struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Provider string         `json:"provider"`
		Region   string         `json:"region"`
		Zones    []string       `json:"zones"`
		Taints   []corev1.Taint `json:"taints"`
	} `json:"spec"`
}

// Clusters returns the member clusters, by name; one that does not decode
// is left out.
func (v *View) Clusters() []hold.MemberCluster {
	objs, err := v.clusters.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := make([]hold.MemberCluster, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var c clusterObject
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c) != nil {
			continue
		}
		out = append(out, hold.MemberCluster{Name: c.Metadata.Name, Provider: c.Spec.Provider, Region: c.Spec.Region,
			Zones: c.Spec.Zones, Labels: c.Metadata.Labels, Taints: c.Spec.Taints})
	}
	slices.SortFunc(out, func(a, b hold.MemberCluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Namespace returns a namespace's labels and annotations.
func (v *View) Namespace(name string) (map[string]string, map[string]string, bool) {
	ns, err := v.namespaces.Get(name)
	if err != nil {
		return nil, nil, false
	}
	return ns.Labels, ns.Annotations, true
}

// Annotations reads the workload ref from the API server. A kind the
// server's discovery did not list when last read is looked up again once
// (a CRD installed since).
func (v *View) Annotations(ctx context.Context, ref hold.WorkloadRef) (map[string]string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("spec.resource.apiVersion %q: %w", ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	m, err := v.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		v.mapper.Reset()
		m, err = v.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = v.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if ref.Namespace == "" {
			return nil, errors.New("spec.resource.namespace is empty for a namespaced kind")
		}
		ri = v.dyn.Resource(m.Resource).Namespace(ref.Namespace)
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return u.GetAnnotations(), nil
}
