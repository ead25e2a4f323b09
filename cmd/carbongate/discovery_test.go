package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/gateway/remote/remotetest"
)

// fakeAPIServer answers the Kubernetes API calls discovery makes (API
// discovery, then a labelled list of InferenceServices) over real HTTPS
// (client-go sends bearer tokens only over TLS), so the flags, the
// kubeconfig and the client are exercised end to end.
type fakeAPIServer struct {
	*httptest.Server
	mu        sync.Mutex
	selectors []string // labelSelector of each list call
	auth      []string
}

func newFakeAPIServer(t *testing.T, ns string, items ...kserve.InferenceService) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	list := kserve.InferenceServiceList{
		TypeMeta: metav1.TypeMeta{APIVersion: "serving.kserve.io/v1beta1", Kind: "InferenceServiceList"},
		Items:    items,
	}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(v); err != nil {
			t.Error(err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api", func(w http.ResponseWriter, r *http.Request) {
		reply(w, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, r *http.Request) {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: "serving.kserve.io/v1beta1", Version: "v1beta1"}
		reply(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "serving.kserve.io", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}})
	})
	mux.HandleFunc("GET /apis/serving.kserve.io/v1beta1", func(w http.ResponseWriter, r *http.Request) {
		reply(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "serving.kserve.io/v1beta1",
			APIResources: []metav1.APIResource{{Name: "inferenceservices", SingularName: "inferenceservice", Namespaced: true,
				Kind: "InferenceService", Verbs: metav1.Verbs{"get", "list", "watch"}, ShortNames: []string{"isvc"}}}})
	})
	mux.HandleFunc("GET /apis/serving.kserve.io/v1beta1/namespaces/"+ns+"/inferenceservices", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.selectors = append(f.selectors, r.URL.Query().Get("labelSelector"))
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		reply(w, list)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Logf("fake API server: unexpected %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})
	f.Server = httptest.NewTLSServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPIServer) kubeconfig(t *testing.T, ns string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority-data: %s}
contexts:
- name: test
  context: {cluster: test, user: test, namespace: %s}
current-context: test
users:
- name: test
  user: {token: discovery-test-token}
`, f.URL, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw})), ns)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readyISVC is an InferenceService as KServe's controller reports a ready
// one, its predictor at url.
func readyISVC(t *testing.T, ns, name, zone, url string) kserve.InferenceService {
	t.Helper()
	o := kserve.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{kserve.LabelZone: zone, kserve.LabelSignal: "lifecycle"}}}
	o.Status.Conditions = []kserve.Condition{
		{Type: "Ready", Status: corev1.ConditionTrue},
		{Type: "PredictorReady", Status: corev1.ConditionTrue},
	}
	o.Status.Components = map[string]kserve.ComponentStatus{"predictor": {URL: url}}
	return o
}

// TestKServeDiscovery: --kserve-namespace with --kubeconfig routes DE to
// the InferenceService the API server lists as ready; the not-ready SE
// service is left out (SE falls back in process).
func TestKServeDiscovery(t *testing.T) {
	t.Parallel()
	de := remotetest.ServeREST(t, remotetest.NewBackend("carbon-forecaster-de", 24, 96, 100), "DE")
	se := readyISVC(t, "carbon", "carbon-forecaster-se", "SE", "http://127.0.0.1:1")
	se.Status.Conditions[0].Status = corev1.ConditionFalse
	api := newFakeAPIServer(t, "carbon", readyISVC(t, "carbon", "carbon-forecaster-de", "DE", de.Endpoint.URL), se)
	m, logs := startMain(t, "--kserve-namespace", "carbon", "--kubeconfig", api.kubeconfig(t, "carbon"), "--drain-delay", "0s")
	resp, err := http.Post(m.URL()+"/v1/schedule", "application/json", strings.NewReader(`{"zones":["DE","SE"],"duration":"PT3H"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Provenance map[string]struct{ Model, Source string } `json:"provenance"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if p := r.Provenance["DE"]; p.Source != "zone" || p.Model != "carbon-forecaster-de" {
		t.Errorf("DE provenance %+v, want the discovered zone model", p)
	}
	if p := r.Provenance["SE"]; p.Source == "zone" {
		t.Errorf("SE provenance %+v: its InferenceService is not ready", p)
	}
	api.mu.Lock()
	sel, auth := api.selectors, api.auth
	api.mu.Unlock()
	if len(sel) == 0 || sel[0] != kserve.LabelZone || auth[0] != "Bearer discovery-test-token" {
		t.Errorf("list calls: selectors %q, auth %q; want %q with the kubeconfig's token", sel, auth, kserve.LabelZone)
	}
	if !strings.Contains(logs.String(), `"msg":"remote models routed","endpoints":1`) {
		t.Errorf("no log of the discovered route:\n%s", logs)
	}
}

func TestDiscoveryFlagErrors(t *testing.T) {
	t.Parallel()
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("[]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := newFakeAPIServer(t, "carbon")
	kc := api.kubeconfig(t, "carbon")
	for _, tt := range []struct {
		note string
		args []string
		want string
	}{
		{"kubeconfig alone", []string{"--kubeconfig", kc}, "--kubeconfig needs --kserve-namespace"},
		{"both route sources", []string{"--kserve-namespace", "carbon", "--kubeconfig", kc, "--routes", routes}, "--routes and --kserve-namespace are both set"},
		{"bad protocol", []string{"--kserve-namespace", "carbon", "--kubeconfig", kc, "--kserve-protocol", "http3"}, "--kserve-protocol: protocol \"http3\" is not one of rest, grpc"},
		{"bad signal", []string{"--kserve-namespace", "carbon", "--kubeconfig", kc, "--kserve-signal", "marginal"}, "--kserve-signal:"},
		{"bad namespace", []string{"--kserve-namespace", "Carbon_NS", "--kubeconfig", kc}, "--kserve-namespace:"},
		{"missing kubeconfig", []string{"--kserve-namespace", "carbon", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, "--kubeconfig: kubeconfig does not load"},
	} {
		t.Run(tt.note, func(t *testing.T) {
			m := NewMain()
			m.Stderr = io.Discard
			if err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			err := m.Run(context.Background())
			m.Close()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err=%v, want %q", err, tt.want)
			}
		})
	}
}
