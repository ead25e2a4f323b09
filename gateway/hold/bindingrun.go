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
// members it went to and the status Karmada reflects from each.
type accountedBinding struct {
	Spec struct {
		Clusters []struct {
			Name string `json:"name"`
		} `json:"clusters"`
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
// divided over several members (a run in one zone) and, decided in
// shadow, that its policy scheduled to one member at most. Deployments and
// divided Jobs are placed and held, not accounted.
func Accounted(b *unstructured.Unstructured) bool {
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(b.Object, path...); return v }
	if str("spec", "resource", "apiVersion") != "batch/v1" || str("spec", "resource", "kind") != "Job" {
		return false
	}
	replicas, _, _ := unstructured.NestedInt64(b.Object, "spec", "replicas")
	if str("spec", "placement", "replicaScheduling", "replicaSchedulingType") == "Divided" && replicas > 1 {
		return false
	}
	clusters, _, _ := unstructured.NestedSlice(b.Object, "spec", "clusters")
	return Mode(b.GetAnnotations()) != ModeShadow || len(clusters) <= 1
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
	a := b.GetAnnotations()
	member, ranIn := a[AnnotationCluster], ""
	if Mode(a) == ModeShadow { // it ran where its policy placed it
		if member, ranIn, err = shadowMember(ab, a); err != nil {
			return ledger.Workload{}, err
		}
	}
	var j batchv1.Job
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
	w, err := WorkloadOf(BindingKind, m, start, end, sig)
	if ranIn != "" {
		w.BaselineZone = forecast.Zone(ranIn) // as submitted: ledger.Shadow's baseline
	}
	return w, err
}

// shadowMember returns the member a binding decided in shadow (annotated
// a) was scheduled to by its policy and the grid zone of that member (one
// of the candidates carbongate decided among, or the decided one); none
// before it is scheduled. An error says why the zone is not known.
func shadowMember(ab accountedBinding, a map[string]string) (member, zone string, err error) {
	if len(ab.Spec.Clusters) != 1 {
		return "", "", nil
	}
	member = ab.Spec.Clusters[0].Name
	if member == a[AnnotationCluster] {
		return member, a[AnnotationZone], nil
	}
	cs, _, err := ParseCandidates(a)
	if err != nil {
		return "", "", err
	}
	for _, c := range cs {
		if c.Cluster == member {
			return member, c.Zone, nil
		}
	}
	return "", "", fmt.Errorf("ran in member cluster %s, whose grid zone carbongate did not record (not a candidate of its decision)", member)
}
