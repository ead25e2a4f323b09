package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/models/history"
	"github.com/carbongate/carbongate/models/ledger"
)

// releasedBinding is a released ResourceBinding of a Job (of deployment,
// a Deployment's) decided for member-se (SE) at 02:00, declaring 1 kW,
// whose Job Karmada reflects as run there 02:00–03:00.
func releasedBinding(kind string) *unstructured.Unstructured {
	b := newBinding()
	b.SetNamespace("batch")
	b.SetName("render-job")
	b.SetLabels(map[string]string{hold.Label: hold.Released})
	b.SetCreationTimestamp(metav1.NewTime(lat(0, 30)))
	a := hold.Decision{Zone: "SE", Start: lat(2, 0), ReleaseBy: lat(6, 0)}.Annotations()
	a[hold.AnnotationCluster], a[hold.AnnotationPowerWatts], a[hold.AnnotationBaselineZone] = "member-se", "1000", "DE"
	a[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: hold.BindingKind, Namespace: "batch", Name: "render-job"}, a)
	b.SetAnnotations(a)
	apiVersion := "batch/v1"
	if kind == "Deployment" {
		apiVersion = "apps/v1"
	}
	b.Object["spec"] = map[string]any{"resource": map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": "batch", "name": "render"},
		"clusters": []any{map[string]any{"name": "member-se"}}}
	b.Object["status"] = map[string]any{"aggregatedStatus": []any{map[string]any{"clusterName": "member-se",
		"status": map[string]any{"startTime": lat(2, 0).Format(time.RFC3339), "completionTime": lat(3, 0).Format(time.RFC3339)}}}}
	return b
}

// TestBindingRecorder: the recorder's filter passes released bindings of
// Jobs and drops held ones and Deployments' (counting a deleted one
// apart); once the hours of its run are observed it records a binding's
// realized saving on it, signed, in the decided zone against the
// baseline's, with its Event.
func TestBindingRecorder(t *testing.T) {
	t.Parallel()
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	b := releasedBinding("Job")
	c := newFake().WithObjects(b).Build()
	rec := record.NewFakeRecorder(10)
	r := bindingRecorder()
	r.deps = deps{client: c, clock: fixedClock(lat(6, 0)), events: rec, metrics: newMetrics(nil), log: slog.New(slog.DiscardHandler), signer: placeSigner}
	r.obs, r.signal, r.retry, r.horizon = history.New(tables), forecast.SignalLifecycle, DefaultLedgerRetry, DefaultLedgerHorizon

	p := r.accounted()
	held := releasedBinding("Job")
	held.SetLabels(map[string]string{hold.Label: hold.Held})
	for _, c := range []struct {
		name string
		o    *unstructured.Unstructured
		want bool
	}{{"released Job", releasedBinding("Job"), true}, {"held Job", held, false}, {"released Deployment", releasedBinding("Deployment"), false}} {
		if got := p.Update(event.UpdateEvent{ObjectOld: c.o, ObjectNew: c.o}); got != c.want {
			t.Errorf("%s: passed %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)}); err != nil {
		t.Fatal(err)
	}
	got := newBinding()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	a := got.GetAnnotations()
	if err := placeSigner.VerifyRecord(hold.Subject{Kind: hold.BindingKind, Namespace: "batch", Name: "render-job"}, a); err != nil {
		t.Fatalf("record: %v (%v)", err, a)
	}
	want, err := ledger.Account(context.Background(), history.New(tables), ledger.Workload{Zone: "SE", BaselineZone: "DE", Signal: forecast.SignalLifecycle,
		PowerWatts: 1000, AdmittedAt: lat(0, 30), Started: lat(2, 0), Ended: lat(3, 0)})
	if err != nil || a[hold.AnnotationRealizedStatus] != string(ledger.Realized) || a[hold.AnnotationRealizedAvoided] != hold.RecordOf(want)[hold.AnnotationRealizedAvoided] {
		t.Fatalf("record %v, want realized avoided %s g (%v)", a, hold.RecordOf(want)[hold.AnnotationRealizedAvoided], err)
	}
	if ev := <-rec.Events; !strings.Contains(ev, "Realized") || !strings.Contains(ev, "in SE") {
		t.Errorf("event %q", ev)
	}
	// Deleted before it ran: counted apart (and never reconciled).
	gone := releasedBinding("Job")
	gone.Object["status"] = map[string]any{}
	if p.Delete(event.DeleteEvent{Object: gone}) {
		t.Error("a deleted binding was passed on")
	}
	if n := testutil.ToFloat64(r.metrics.ledgerWorkloads.WithLabelValues("batch", hold.ModeEnforce, statusDeleted)); n != 1 {
		t.Errorf("deleted bindings counted %v, want 1", n)
	}
}
