package hold

import (
	"encoding/json"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/ledger"
)

// Accounted reports whether the ledger accounts ResourceBinding b
// (NotAccounted says why not).
func Accounted(b *unstructured.Unstructured) bool { return NotAccounted(b) == "" }

// NotAccounted says why the ledger does not account ResourceBinding b, ""
// when it does: a binding of a batch/v1 Job (a workload that ends) whose
// replicas are not divided over several members (a run in one zone) and
// that Karmada scheduled to one member at most, the decided one or another
// whose grid zone the decision recorded (a candidate). Deployments and
// divided Jobs are placed and held, not accounted; so is a Job its policy
// ran in several members at once (in shadow, or by a later group of
// clusterAffinities) or in a member of unknown zone.
func NotAccounted(b *unstructured.Unstructured) string {
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(b.Object, path...); return v }
	if str("spec", "resource", "apiVersion") != "batch/v1" || str("spec", "resource", "kind") != "Job" {
		return "not of a Job (a workload that ends)"
	}
	replicas, _, _ := unstructured.NestedInt64(b.Object, "spec", "replicas")
	if str("spec", "placement", "replicaScheduling", "replicaSchedulingType") == "Divided" && replicas > 1 {
		return "its replicas are divided over several member clusters"
	}
	if _, _, err := ranIn(b); err != nil {
		return err.Error()
	}
	return ""
}

// ranIn returns the member binding b runs in — the one Karmada scheduled
// it to, else (not scheduled yet) the decided one — and its grid zone: the
// decided zone, or that of the candidate naming the member. An error says
// why there is no one member of known zone.
func ranIn(b *unstructured.Unstructured) (member string, zone forecast.Zone, err error) {
	a := b.GetAnnotations()
	member = a[AnnotationCluster]
	clusters, _, _ := unstructured.NestedSlice(b.Object, "spec", "clusters")
	switch {
	case len(clusters) > 1:
		return "", "", fmt.Errorf("scheduled to %d member clusters at once", len(clusters))
	case len(clusters) == 1:
		if c, ok := clusters[0].(map[string]any); ok {
			member, _ = c["name"].(string)
		}
	}
	if member == a[AnnotationCluster] {
		return member, forecast.Zone(a[AnnotationZone]), nil
	}
	cs, _, err := ParseCandidates(a)
	if err != nil {
		return "", "", err
	}
	if i := slices.IndexFunc(cs, func(c Candidate) bool { return c.Cluster == member }); i >= 0 {
		return member, forecast.Zone(cs[i].Zone), nil
	}
	return "", "", fmt.Errorf("scheduled to member cluster %s, not the decided %s, whose grid zone the decision did not record", member, a[AnnotationCluster])
}

// BindingWorkload is a held (or released) ResourceBinding of a Job
// (Accounted) as the ledger sees it: its decision's annotations (see
// WorkloadOf: the workload's declared power is copied there when it is
// placed), its creation its admission, and its run the Job's in the member
// it runs in (ranIn: the decided one, unless Karmada scheduled it to
// another candidate — by a later group of clusterAffinities, or by its
// policy in shadow), as Karmada reflects that Job's status into the
// binding (status.aggregatedStatus: start and completion times,
// conditions; JobRun). Its run is charged in that member's zone; in
// shadow that is where it ran as submitted, ledger.Shadow's baseline. An
// error says what does not parse.
func BindingWorkload(b *unstructured.Unstructured, sig forecast.Signal) (ledger.Workload, error) {
	var st struct {
		Status struct {
			AggregatedStatus []struct {
				ClusterName string                `json:"clusterName"`
				Status      *runtime.RawExtension `json:"status"`
			} `json:"aggregatedStatus"`
		} `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(b.Object, &st); err != nil {
		return ledger.Workload{}, fmt.Errorf("reading the binding: %w", err)
	}
	member, zone, err := ranIn(b)
	if err != nil {
		return ledger.Workload{}, err
	}
	var j batchv1.Job
	for _, s := range st.Status.AggregatedStatus {
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
	if err != nil {
		return w, err
	}
	if Mode(b.GetAnnotations()) == ModeShadow {
		w.BaselineZone = zone // ran as submitted there
	} else {
		w.Zone = zone // the decided zone, unless it ran elsewhere
	}
	return w, nil
}
