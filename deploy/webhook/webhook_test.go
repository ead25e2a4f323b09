package webhook

import (
	"bytes"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast"
)

// testCA returns a self-signed certificate's PEM and its key's PEM.
func testCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := cert.GenerateSelfSignedCertKey("carbongate.carbongate.svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

func TestRender(t *testing.T) {
	t.Parallel()
	ca, _ := testCA(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		url  string
		fail admissionregistrationv1.FailurePolicyType
	}{
		{name: "as shipped", cfg: Config{CABundle: ca}, fail: admissionregistrationv1.Fail},
		{name: "url", cfg: Config{CABundle: ca, URL: "https://127.0.0.1:8443/v1/admission/mutate"},
			url: "https://127.0.0.1:8443/v1/admission/mutate", fail: admissionregistrationv1.Fail},
		{name: "ignore", cfg: Config{CABundle: ca, FailurePolicy: "Ignore"}, fail: admissionregistrationv1.Ignore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := Render(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(out, []byte(Placeholder)) || bytes.Contains(out, []byte("creationTimestamp")) {
				t.Errorf("rendered:\n%s", out)
			}
			var c admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(out, &c); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(c.Webhooks) != 2 || c.Webhooks[0].Name != VmTemplatesName || c.Webhooks[1].Name != WorkloadsName {
				t.Fatalf("webhooks %d, want %s and %s", len(c.Webhooks), VmTemplatesName, WorkloadsName)
			}
			if got := *c.Webhooks[0].FailurePolicy; got != tc.fail {
				t.Errorf("failurePolicy %s, want %s", got, tc.fail)
			}
			if got := *c.Webhooks[1].FailurePolicy; got != admissionregistrationv1.Ignore {
				t.Errorf("the workload webhook's failurePolicy %s, want Ignore whatever is asked", got)
			}
			for _, w := range c.Webhooks {
				checkClient(t, w, ca, tc.url)
			}
			got, err := Configuration(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != c.Name || !bytes.Equal(got.Webhooks[0].ClientConfig.CABundle, ca) {
				t.Errorf("Configuration differs from Render: %+v", got)
			}
		})
	}
}

// checkClient checks a webhook's CA bundle and where it is called.
func checkClient(t *testing.T, w admissionregistrationv1.MutatingWebhook, ca []byte, url string) {
	t.Helper()
	if !bytes.Equal(w.ClientConfig.CABundle, ca) {
		t.Errorf("%s: caBundle %q, want the CA's PEM", w.Name, w.ClientConfig.CABundle)
	}
	if url == "" {
		if w.ClientConfig.URL != nil || w.ClientConfig.Service == nil || w.ClientConfig.Service.Name != "carbongate" {
			t.Errorf("%s: clientConfig %+v, want the carbongate Service", w.Name, w.ClientConfig)
		}
	} else if w.ClientConfig.Service != nil || w.ClientConfig.URL == nil || *w.ClientConfig.URL != url {
		t.Errorf("%s: clientConfig %+v, want url %s and no Service", w.Name, w.ClientConfig, url)
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	ca, key := testCA(t)
	for _, tc := range []struct {
		name, field, msg string
		cfg              Config
	}{
		{"no bundle", "ca_bundle", "required", Config{}},
		{"key", "ca_bundle", "RSA PRIVATE KEY block", Config{CABundle: append(append([]byte{}, ca...), key...)}},
		{"not PEM", "ca_bundle", "other than PEM", Config{CABundle: []byte("hello")}},
		{"trailing junk", "ca_bundle", "other than PEM", Config{CABundle: append(append([]byte{}, ca...), "junk"...)}},
		{"bad certificate", "ca_bundle", "does not parse", Config{CABundle: []byte("-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n")}},
		{"http", "url", "https://", Config{CABundle: ca, URL: "http://127.0.0.1/v1/admission/mutate"}},
		{"query", "url", "query", Config{CABundle: ca, URL: "https://127.0.0.1/v1/admission/mutate?x=1"}},
		{"user", "url", "user info", Config{CABundle: ca, URL: "https://u:p@127.0.0.1/v1/admission/mutate"}},
		{"policy", "failure_policy", `"ignore"`, Config{CABundle: ca, FailurePolicy: "ignore"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Render(tc.cfg)
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != tc.field || !strings.Contains(forecast.ErrorMessage(err), tc.msg) {
				t.Errorf("error %v (field %q), want EINVALID on %s containing %q", err, forecast.ErrorField(err), tc.field, tc.msg)
			}
		})
	}
}
