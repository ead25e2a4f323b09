package controller

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/hold"
)

// clusterView is hold.Cluster over the informer cache: nodes (names,
// labels and taints) and namespaces (metadata only).
type clusterView struct {
	reader client.Reader
	log    *slog.Logger
}

var _ hold.Cluster = (*clusterView)(nil)

// readTimeout bounds a cache read; before the cache has synced a read
// waits for it.
const readTimeout = time.Second

func metaOf(kind string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(kind))
	return m
}

// Nodes returns the cached nodes (names, labels and taints: see
// nodeTransform), not copied: the caller only reads them.
func (v *clusterView) Nodes() []*corev1.Node {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var list corev1.NodeList
	if err := v.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		v.log.Warn("controller: listing nodes", "error", err)
		return nil
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return nodes
}

// nodeTransform keeps of a Node what the webhook's placement reads: name,
// labels and taints (a node's status, its images and conditions, is most
// of its size).
func nodeTransform(o any) (any, error) {
	n, ok := o.(*corev1.Node)
	if !ok { // a tombstone
		return o, nil
	}
	return &corev1.Node{TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable}}, nil
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
