//go:build interop

package federation

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// testBindingWebhook checks the hook point carbongate's placement uses on
// this federation: a mutating webhook on ResourceBindings that narrows
// spec.placement.clusterAffinity to one member. A Deployment whose policy
// allows all three members reaches that member only, and still only it
// after an edit of the Deployment, which makes Karmada rewrite the
// binding's placement from the policy (the webhook narrows it again on
// UPDATE).
func testBindingWebhook(t *testing.T, f *Federation) {
	const ns, name = "narrowed", "narrowed"
	to := f.Member("member-de")
	hook := startNarrowingWebhook(t, to.Name, f.Karmada.WebhookCA)
	f.RegisterBindingWebhook(t, "narrow-bindings", hook.url, hook.ca)
	createNamespace(t, f, ns)
	createDeployment(t, f, ns, name, 1, map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}})
	waitDeployment(t, to, ns, name, 1)
	time.Sleep(2 * time.Second) // what the other members would get comes with it
	wantOnlyIn(t, f, to, ns, name)
	if hook.creates.Load() == 0 {
		t.Fatal("the webhook saw no binding CREATE")
	}

	updates := hook.updates.Load()
	editDeployment(t, f, to, ns, name)
	time.Sleep(2 * time.Second)
	wantOnlyIn(t, f, to, ns, name)
	if hook.updates.Load() == updates {
		t.Error("the webhook saw no binding UPDATE after the edit")
	}
}

// editDeployment annotates Deployment ns/name on Karmada, which makes
// Karmada rewrite its binding's placement from the policy, and waits until
// the edit reaches member to.
func editDeployment(t *testing.T, f *Federation, to *Cluster, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"example.com/edited":"yes"}}}`)
	if _, err := f.Karmada.Kube.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, time.Minute, to.Name+": the edit propagated", func(ctx context.Context) error {
		d, err := to.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Annotations["example.com/edited"] != "yes" {
			return fmt.Errorf("annotations %v", d.Annotations)
		}
		return nil
	})
}

// narrowingWebhook is a webhook server for this test: it sets every
// binding's clusterAffinity to one cluster. Like carbongate's, it requires
// the API server's client certificate.
type narrowingWebhook struct {
	url              string
	ca               []byte // PEM
	creates, updates atomic.Int64
}

func startNarrowingWebhook(t *testing.T, cluster string, clientCA *services.CA) *narrowingWebhook {
	ca := services.NewCA(t, "narrowing-webhook-ca")
	certPEM, keyPEM := ca.Issue(t, "127.0.0.1", false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	h := &narrowingWebhook{ca: ca.PEM}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/placement/clusterAffinity",
		"value": map[string]any{"clusterNames": []string{cluster}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		switch review.Request.Operation {
		case admissionv1.Create:
			h.creates.Add(1)
		case admissionv1.Update:
			h.updates.Add(1)
		}
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, Patch: patch, PatchType: &pt}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	clients := x509.NewCertPool()
	clients.AddCert(clientCA.Cert)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}
