package hold

import corev1 "k8s.io/api/core/v1"

// Cluster is what the webhook reads of the cluster to hold Jobs and Pods:
// the controller's informer cache in production.
type Cluster interface {
	// Nodes returns the cluster's nodes: their names, labels and taints
	// are read (nothing else need be filled in), never written.
	Nodes() []*corev1.Node
	// Namespace returns a namespace's labels and annotations, ok false
	// when it is not known.
	Namespace(name string) (labels, annotations map[string]string, ok bool)
}
