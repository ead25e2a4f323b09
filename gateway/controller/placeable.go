package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/gateway/hold"
)

// maxNodeReasons bounds the nodes an Unplaceable event names.
const maxNodeReasons = 3

// warnUnplaceable records, after obj's release, when where it was
// released to cannot take it now (cannotTake) — for a Job or Pod no node
// of its decided region, NotReady, unreachable, cordoned or tainted since
// the decision (which looks past a node's current state): an Unplaceable
// event on obj saying why, and the unplaceable metric. Nothing else
// changes: its pods wait Pending with the scheduler's reason (a binding,
// unscheduled with Karmada's) until it can.
func (r *releaser) warnUnplaceable(ctx context.Context, obj client.Object) {
	if r.nodes == nil {
		return
	}
	why, err := r.cannotTake(ctx, r.nodes, obj)
	if err != nil {
		r.log.Warn("controller: checking where a released workload runs", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "error", err)
		return
	}
	if why.now == "" {
		return
	}
	r.metrics.unplaceable.WithLabelValues(r.kind).Inc()
	r.events.Eventf(obj, corev1.EventTypeWarning, "Unplaceable", "%s", why.released)
}

// unavailable says why where a workload was decided to run cannot take it
// now ("" when it can): now says so, released what follows from a release
// there.
type unavailable struct {
	now, released string
}

// nodesCannotTake is the check of Jobs and Pods whose pod spec spec
// returns: no node of the decided region can take a pod of it now.
func nodesCannotTake(spec func(client.Object) *corev1.PodSpec) func(context.Context, client.Reader, client.Object) (unavailable, error) {
	return func(ctx context.Context, r client.Reader, obj client.Object) (unavailable, error) {
		region := obj.GetAnnotations()[hold.AnnotationRegion]
		if region == "" {
			return unavailable{}, nil
		}
		var nodes corev1.NodeList
		if err := r.List(ctx, &nodes, client.MatchingLabels{hold.RegionLabel: region}); err != nil {
			return unavailable{}, fmt.Errorf("listing the nodes of region %s: %w", region, err)
		}
		why := unplaceable(nodes.Items, spec(obj))
		if why == "" {
			return unavailable{}, nil
		}
		return unavailable{now: fmt.Sprintf("no node of region %s can take its pods now (%s)", region, why),
			released: fmt.Sprintf("released to run in %s, but no node there can take its pods now (%s): they stay Pending until one can; the scheduler's reason is on the pods' FailedScheduling events", region, why)}, nil
	}
}

// unplaceable returns why none of nodes (a region's) can take a pod of
// spec ps now — "" when one can: not cordoned, every NoSchedule or
// NoExecute taint tolerated (node.kubernetes.io/not-ready and unreachable
// included), its required node affinity met.
func unplaceable(nodes []corev1.Node, ps *corev1.PodSpec) string {
	if len(nodes) == 0 {
		return "the region has no node"
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: *ps})
	var reasons []string
	for i := range nodes {
		n := &nodes[i]
		var why string
		if t, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, ps.Tolerations, blocks, false); untolerated {
			why = fmt.Sprintf("taint %s:%s", t.Key, t.Effect)
		} else if n.Spec.Unschedulable {
			why = "cordoned"
		} else if ok, err := affinity.Match(n); err != nil || !ok {
			why = "the pod's node affinity or selector does not match"
		} else {
			return ""
		}
		if len(reasons) < maxNodeReasons {
			reasons = append(reasons, n.Name+": "+why)
		}
	}
	if len(nodes) > maxNodeReasons {
		reasons = append(reasons, fmt.Sprintf("and %d more", len(nodes)-maxNodeReasons))
	}
	return strings.Join(reasons, "; ")
}

// blocks reports whether a taint keeps untolerating pods off a node now.
func blocks(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
