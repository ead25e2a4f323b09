package controller

import (
	"context"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
)

// clusterView is admission.Cluster over the informer cache: nodes and
// namespaces as metadata only.
type clusterView struct {
	reader client.Reader
	log    *slog.Logger
}

var _ admission.Cluster = (*clusterView)(nil)

// readTimeout bounds a cache read; before the cache has synced a read
// waits for it.
const readTimeout = time.Second

func metaOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// NodeRegions returns the distinct region labels of the nodes, sorted.
func (v *clusterView) NodeRegions() []string {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := v.reader.List(ctx, list); err != nil {
		v.log.Warn("controller: listing nodes", "error", err)
		return nil
	}
	var regions []string
	for _, n := range list.Items {
		if r := n.Labels[hold.RegionLabel]; r != "" && !slices.Contains(regions, r) {
			regions = append(regions, r)
		}
	}
	slices.Sort(regions)
	return regions
}

// Namespace returns a namespace's labels and annotations.
func (v *clusterView) Namespace(name string) (map[string]string, map[string]string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	ns := metaOf("Namespace")
	if err := v.reader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return nil, nil, false
	}
	return ns.Labels, ns.Annotations, true
}
