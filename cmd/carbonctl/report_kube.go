package main

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/ledger"
)

// heldWorkloads lists the Jobs and bare Pods of namespace ("" for all)
// that carbongate held or decided in shadow (label hold.Label), as ledger
// workloads of signal, their times read by at (hold.Accountable; a shadow
// one as what enforcing would have avoided);
// skipped says which could not be read and why.
func heldWorkloads(ctx context.Context, cs kubernetes.Interface, namespace string, sig forecast.Signal, at func(time.Time) time.Time) ([]ledger.Workload, []string, error) {
	opts := metav1.ListOptions{LabelSelector: hold.Label}
	jobs, err := cs.BatchV1().Jobs(namespace).List(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("listing Jobs: %w", err)
	}
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("listing Pods: %w", err)
	}
	c := collected{at: at}
	for i := range jobs.Items {
		w, err := hold.JobWorkload(&jobs.Items[i], sig)
		c.add("Job", &jobs.Items[i], w, err)
	}
	for i := range pods.Items {
		w, err := hold.PodWorkload(&pods.Items[i], sig)
		c.add("Pod", &pods.Items[i], w, err)
	}
	return c.ws, c.skipped, nil
}

// collected are the workloads a report accounts, their times read by at,
// and those skipped, saying why.
type collected struct {
	ws      []ledger.Workload
	skipped []string
	at      func(time.Time) time.Time
}

// add adds w, read from the object kind o (err: why it could not be), as
// the ledger accounts it (hold.Accountable), or says why not.
func (c *collected) add(kind string, o metav1.Object, w ledger.Workload, err error) {
	if err == nil {
		w, err = hold.Accountable(w, o.GetAnnotations(), c.at)
	}
	if err != nil {
		c.skipped = append(c.skipped, fmt.Sprintf("%s %s/%s: %v", kind, o.GetNamespace(), o.GetName(), err))
		return
	}
	c.ws = append(c.ws, w)
}

// bindingResource is Karmada's ResourceBindings.
var bindingResource = schema.GroupVersionResource{Group: hold.BindingGroup, Version: hold.BindingVersion, Resource: "resourcebindings"}

// heldBindings lists the Karmada ResourceBindings of namespace ("" for
// all) that carbongate held or decided in shadow, as ledger workloads of
// signal: those the ledger accounts (hold.NotAccounted; the others are
// skipped, saying why). An API server that serves no ResourceBindings
// (not Karmada's) has none; one that does not let the user list them says
// so in skipped.
func heldBindings(ctx context.Context, dyn dynamic.Interface, namespace string, sig forecast.Signal, at func(time.Time) time.Time) ([]ledger.Workload, []string, error) {
	list, err := dyn.Resource(bindingResource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: hold.Label})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case apierrors.IsForbidden(err):
		return nil, []string{"Karmada's ResourceBindings: not allowed to list them (" + err.Error() + ")"}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("listing ResourceBindings: %w", err)
	}
	c := collected{at: at}
	for i := range list.Items {
		b := &list.Items[i]
		if why := hold.NotAccounted(b); why != "" {
			c.skipped = append(c.skipped, fmt.Sprintf("ResourceBinding %s/%s: not accounted: %s", b.GetNamespace(), b.GetName(), why))
			continue
		}
		w, err := hold.BindingWorkload(b, sig)
		c.add(hold.BindingKind, b, w, err)
	}
	return c.ws, c.skipped, nil
}
