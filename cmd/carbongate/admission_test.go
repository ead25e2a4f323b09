package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// reviewOf returns an AdmissionReview v1 of operation op on a VmTemplate.
func reviewOf(uid, op string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"` + uid + `",
		"kind":{"group":"carbongate.io","version":"v1alpha1","kind":"VmTemplate"},
		"resource":{"group":"carbongate.io","version":"v1alpha1","resource":"vmtemplates"},
		"operation":"` + op + `","object":{"apiVersion":"carbongate.io/v1alpha1","kind":"VmTemplate",
		"metadata":{"name":"batch-1","namespace":"jobs"},
		"spec":{"duration":"PT3H","maxLatencyMs":0,"originRegion":"westeurope","deadline":"2021-06-03T00:00:00Z"}}}}`
}

type reviewResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		UID       string `json:"uid"`
		Allowed   bool   `json:"allowed"`
		Patch     []byte `json:"patch"`
		PatchType string `json:"patchType"`
		Status    *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"response"`
}

// TestAdmissionOverTLS: with --tls-cert/--tls-key every route is HTTPS
// (TLS ≥ 1.2); with --admission-client-ca the webhook route needs a
// client certificate signed by that CA, other routes do not.
func TestAdmissionOverTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	serverCA, clientCA, otherCA := services.NewCA(t, "server-ca"), services.NewCA(t, "apiserver-client-ca"), services.NewCA(t, "other-ca")
	now := time.Now()
	certPEM, keyPEM := serverCA.Issue(t, "carbongate", false, now.Add(-time.Hour), now.Add(time.Hour))
	m, _ := startMain(t, "--drain-delay", "0s", "--admission",
		"--tls-cert", testsupport.WriteFile(t, dir, "tls.crt", certPEM), "--tls-key", testsupport.WriteFile(t, dir, "tls.key", keyPEM),
		"--admission-client-ca", testsupport.WriteFile(t, dir, "client-ca.crt", clientCA.PEM))
	if !strings.HasPrefix(m.URL(), "https://") {
		t.Fatalf("URL %s, want https", m.URL())
	}
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Cert)
	client := func(ca *services.CA, maxVersion uint16) *http.Client {
		cfg := &tls.Config{RootCAs: roots, MaxVersion: maxVersion}
		if ca != nil {
			c, k := ca.Issue(t, "kube-apiserver", true, now.Add(-time.Hour), now.Add(time.Hour))
			kp, err := tls.X509KeyPair(c, k)
			if err != nil {
				t.Fatal(err)
			}
			// Offered whatever CAs the server names.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &kp, nil }
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	post := func(c *http.Client, body string) (*http.Response, error) {
		return c.Post(m.URL()+"/v1/admission/mutate", "application/json", strings.NewReader(body))
	}

	// Probes need no client certificate.
	resp, err := client(nil, 0).Get(m.URL() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz without a client certificate: %v %v", resp, err)
	}
	resp.Body.Close()

	resp, err = post(client(nil, 0), reviewOf("u1", "CREATE"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "client certificate") {
		t.Fatalf("webhook without a client certificate: %d %s, want 401", resp.StatusCode, b)
	}

	if resp, err := post(client(otherCA, 0), reviewOf("u2", "CREATE")); err == nil {
		resp.Body.Close()
		t.Fatalf("a client certificate of another CA: %d, want a handshake error", resp.StatusCode)
	}
	if _, err := client(nil, tls.VersionTLS11).Get(m.URL() + "/healthz"); err == nil {
		t.Fatal("TLS 1.1 was accepted")
	}

	resp, err = post(client(clientCA, 0), reviewOf("u3", "CREATE"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rv reviewResponse
	if err := json.NewDecoder(resp.Body).Decode(&rv); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if rv.APIVersion != "admission.k8s.io/v1" || rv.Kind != "AdmissionReview" || rv.Response.UID != "u3" ||
		!rv.Response.Allowed || rv.Response.PatchType != "JSONPatch" {
		t.Fatalf("review %+v", rv)
	}
	var ops []struct{ Op, Path string }
	if err := json.Unmarshal(rv.Response.Patch, &ops); err != nil || len(ops) < 3 || ops[1].Path != "/spec/schedulingRegion" {
		t.Fatalf("patch %s: %v", rv.Response.Patch, err)
	}
}

// TestAdmissionPlainHTTP: without TLS flags the webhook is served over
// HTTP (behind a TLS-terminating proxy) with a warning; without
// --admission the route does not exist.
func TestAdmissionPlainHTTP(t *testing.T) {
	t.Parallel()
	m, logs := startMain(t, "--drain-delay", "0s", "--admission", "--admission-fail-open", "--max-body", "2Ki")
	resp, err := http.Post(m.URL()+"/v1/admission/mutate", "application/json", strings.NewReader(reviewOf("u1", "DELETE")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"allowed":true`) || !strings.Contains(string(b), `"uid":"u1"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if !strings.Contains(logs.String(), "plain HTTP") {
		t.Fatalf("no warning about plain HTTP:\n%s", logs)
	}
	wantMetrics(t, m.URL(), `carbongate_admission_reviews_total{result="admitted"} 1`, `carbongate_admission_reviews_total{result="unavailable"} 0`)
	big := strings.Replace(reviewOf("u2", "CREATE"), `"jobs"`, `"`+strings.Repeat("x", 4096)+`"`, 1)
	resp, err = http.Post(m.URL()+"/v1/admission/mutate", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a review over --max-body: %d, want 413", resp.StatusCode)
	}

	if doc := getBody(t, m.URL()+"/openapi.json"); !strings.Contains(doc, `"/v1/admission/mutate"`) || !strings.Contains(doc, `"AdmissionReviewRequest"`) {
		t.Fatal("/openapi.json does not describe the webhook route it serves")
	}

	off, _ := startMain(t, "--drain-delay", "0s")
	if code, _ := post(off.URL()+"/v1/admission/mutate", reviewOf("u1", "DELETE")); code != http.StatusNotFound {
		t.Fatalf("webhook without --admission: %d, want 404", code)
	}
	if doc := getBody(t, off.URL()+"/openapi.json"); strings.Contains(doc, "/v1/admission/mutate") {
		t.Fatal("/openapi.json describes the webhook route without --admission")
	}
}

// wantMetrics fails unless base's /metrics has every line of lines.
func wantMetrics(t *testing.T, base string, lines ...string) {
	t.Helper()
	got := strings.Split(getBody(t, base+"/metrics"), "\n")
	for _, l := range lines {
		if !slices.Contains(got, l) {
			t.Errorf("/metrics has no line %q", l)
		}
	}
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

func post(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestAdmissionStartupErrors: bad TLS material and flag combinations stop
// Run before anything starts, with a message naming the flag.
func TestAdmissionStartupErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := services.NewCA(t, "ca")
	now := time.Now()
	cert, key := ca.Issue(t, "ok", false, now.Add(-time.Hour), now.Add(time.Hour))
	_, otherKey := ca.Issue(t, "other", false, now.Add(-time.Hour), now.Add(time.Hour))
	expired, expiredKey := ca.Issue(t, "old", false, now.Add(-48*time.Hour), now.Add(-time.Hour))
	future, futureKey := ca.Issue(t, "new", false, now.Add(time.Hour), now.Add(48*time.Hour))
	f := func(name string, b []byte) string { return testsupport.WriteFile(t, dir, name, b) }
	certF, keyF := f("tls.crt", cert), f("tls.key", key)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing cert file", []string{"--tls-cert", filepath.Join(dir, "nope.crt"), "--tls-key", keyF}, "--tls-cert"},
		{"missing key file", []string{"--tls-cert", certF, "--tls-key", filepath.Join(dir, "nope.key")}, "--tls-key"},
		{"cert without key", []string{"--tls-cert", certF}, "--tls-cert and --tls-key go together"},
		{"key of another cert", []string{"--tls-cert", certF, "--tls-key", f("other.key", otherKey)}, "not a matching PEM certificate and private key"},
		{"not PEM", []string{"--tls-cert", f("junk.crt", []byte("junk")), "--tls-key", keyF}, "not a matching PEM"},
		{"expired", []string{"--tls-cert", f("expired.crt", expired), "--tls-key", f("expired.key", expiredKey)}, "expired at"},
		{"not yet valid", []string{"--tls-cert", f("future.crt", future), "--tls-key", f("future.key", futureKey)}, "not valid before"},
		{"client CA without TLS", []string{"--admission", "--admission-client-ca", f("ca.crt", ca.PEM)}, "needs --tls-cert"},
		{"client CA without admission", []string{"--tls-cert", certF, "--tls-key", keyF, "--admission-client-ca", f("ca2.crt", ca.PEM)}, "needs --admission"},
		{"client CA not PEM", []string{"--admission", "--tls-cert", certF, "--tls-key", keyF, "--admission-client-ca", f("bad-ca.crt", []byte("x"))}, "no PEM certificate"},
		{"fail-open without admission", []string{"--admission-fail-open"}, "needs --admission"},
		{"timeout over the request timeout", []string{"--admission", "--admission-timeout", "5s"}, "--admission-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := NewMain()
			m.Stderr = io.Discard
			if err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			err := m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatalf("Run succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestMaxBodyFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg  string
		want int64
		ok   bool
	}{
		{"3Mi", 3 << 20, true}, {"65536", 65536, true}, {"1k", 1000, true},
		{"0", 0, false}, {"-1Mi", 0, false}, {"lots", 0, false}, {"0.5", 0, false},
	}
	for _, tt := range tests {
		m := NewMain()
		m.Stderr = io.Discard
		err := m.ParseFlags([]string{"--max-body", tt.arg})
		if (err == nil) != tt.ok || (tt.ok && m.Admission.MaxBody != tt.want) {
			t.Errorf("--max-body %s: %d, %v; want %d ok=%v", tt.arg, m.Admission.MaxBody, err, tt.want, tt.ok)
		}
	}
}

// TestWebhookManifest: deploy/webhook's configuration is a valid
// admissionregistration.k8s.io/v1 object that calls the route carbongate
// serves, for the kind it schedules, within a timeout above carbongate's
// own scheduling bound.
func TestWebhookManifest(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "webhook", "mutatingwebhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("${CA_BUNDLE}")) {
		t.Fatal("no ${CA_BUNDLE} placeholder")
	}
	ca := services.NewCA(t, "webhook-ca")
	b = bytes.ReplaceAll(b, []byte("${CA_BUNDLE}"), []byte(base64.StdEncoding.EncodeToString(ca.PEM)))
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "admissionregistration.k8s.io/v1" || cfg.Kind != "MutatingWebhookConfiguration" || len(cfg.Webhooks) != 2 {
		t.Fatalf("%+v with %d webhooks, want the VmTemplates' and the workloads'", cfg.TypeMeta, len(cfg.Webhooks))
	}
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	wantRules := [][]admissionregistrationv1.RuleWithOperations{
		{{Operations: createUpdate, Rule: admissionregistrationv1.Rule{APIGroups: []string{admission.Group}, APIVersions: []string{admission.Version}, Resources: []string{admission.Resource}}}},
		{{Operations: createUpdate, Rule: admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}}},
			{Operations: createUpdate, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
	}
	for i, w := range cfg.Webhooks {
		svc := w.ClientConfig.Service
		switch {
		case !slices.Equal(w.AdmissionReviewVersions, []string{"v1"}):
			t.Errorf("%s: admissionReviewVersions %v, want [v1]", w.Name, w.AdmissionReviewVersions)
		case w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone:
			t.Errorf("%s: sideEffects %v, want None", w.Name, w.SideEffects)
		case w.TimeoutSeconds == nil || *w.TimeoutSeconds != 5 || time.Duration(*w.TimeoutSeconds)*time.Second <= admission.DefaultTimeout:
			t.Errorf("%s: timeoutSeconds %v, want 5 (above %v)", w.Name, w.TimeoutSeconds, admission.DefaultTimeout)
		case w.FailurePolicy == nil:
			t.Errorf("%s: no failurePolicy", w.Name)
		case svc == nil || svc.Path == nil || *svc.Path != admission.Path:
			t.Errorf("%s: service %+v, want path %s", w.Name, svc, admission.Path)
		case !bytes.Equal(w.ClientConfig.CABundle, ca.PEM):
			t.Errorf("%s: caBundle does not decode to the CA", w.Name)
		}
		if len(w.Rules) != len(wantRules[i]) {
			t.Errorf("%s: rules %+v, want %+v", w.Name, w.Rules, wantRules[i])
			continue
		}
		for j, r := range w.Rules {
			want := wantRules[i][j]
			if !slices.Equal(r.APIGroups, want.APIGroups) || !slices.Equal(r.APIVersions, want.APIVersions) ||
				!slices.Equal(r.Resources, want.Resources) || !slices.Equal(r.Operations, want.Operations) {
				t.Errorf("%s: rule %+v, want %+v", w.Name, r, want)
			}
		}
	}
}
