package hold

import (
	"encoding/json"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/ledger"
)

// accountedBinding is what the ledger reads of a ResourceBinding: the
// workload it propagates, how its replicas are scheduled, the members it
// went to and the status Karmada reflects from each.
type accountedBinding struct {
	Spec struct {
		Resource  WorkloadRef `json:"resource"`
		Replicas  int32       `json:"replicas"`
		Placement *struct {
			ReplicaScheduling *struct {
				Type string `json:"replicaSchedulingType"`
			} `json:"replicaScheduling"`
		} `json:"placement"`
	} `json:"spec"`
	Status struct {
		AggregatedStatus []struct {
			ClusterName string                `json:"clusterName"`
			Status      *runtime.RawExtension `json:"status"`
		} `json:"aggregatedStatus"`
	} `json:"status"`
}

func readBinding(b *unstructured.Unstructured) (accountedBinding, error) {
	var ab accountedBinding
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(b.Object, &ab)
	return ab, err
}

// Accounted reports whether the ledger accounts ResourceBinding b: a
// binding of a batch/v1 Job (a workload that ends) whose replicas are not
// divided over several members (a run in one zone). Deployments and
// divided Jobs are placed and held, not accounted.
func Accounted(b *unstructured.Unstructured) bool {
	ab, err := readBinding(b)
	if err != nil {
		return false
	}
	ref := ab.Spec.Resource
	if ref.APIVersion != "batch/v1" || ref.Kind != "Job" {
		return false
	}
	p := ab.Spec.Placement
	divided := p != nil && p.ReplicaScheduling != nil && p.ReplicaScheduling.Type == "Divided" && ab.Spec.Replicas > 1
	return !divided
}

// BindingWorkload is a held (or released) ResourceBinding of a Job
// (Accounted) as the ledger sees it: its decision's annotations (see
// WorkloadOf: the workload's declared power is copied there when it is
// placed), its creation its admission, and its run the Job's in the member
// cluster it was placed in (AnnotationCluster), as Karmada reflects that
// Job's status into the binding (status.aggregatedStatus: start and
// completion times, conditions; JobRun). An error says what does not
// parse.
func BindingWorkload(b *unstructured.Unstructured, sig forecast.Signal) (ledger.Workload, error) {
	ab, err := readBinding(b)
	if err != nil {
		return ledger.Workload{}, fmt.Errorf("reading the binding: %w", err)
	}
	var j batchv1.Job
	member := b.GetAnnotations()[AnnotationCluster]
	for _, s := range ab.Status.AggregatedStatus {
		if s.ClusterName == member && s.Status != nil && len(s.Status.Raw) > 0 {
			if err := json.Unmarshal(s.Status.Raw, &j.Status); err != nil {
				return ledger.Workload{}, fmt.Errorf("status.aggregatedStatus[%s].status: %w", member, err)
			}
		}
	}
	start, end := JobRun(&j)
	m := metav1.ObjectMeta{Namespace: b.GetNamespace(), Name: b.GetName(), Annotations: b.GetAnnotations(),
		CreationTimestamp: b.GetCreationTimestamp(), DeletionTimestamp: b.GetDeletionTimestamp()}
	return WorkloadOf(BindingKind, m, start, end, sig)
}
