package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/gateway/kserve"
)

func runCtl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDeployRender(t *testing.T) {
	t.Parallel()
	code, out, stderr := runCtl(t, "deploy", "render", "--zones", "DE,se", "--storage-uri", "s3://bucket/prefix",
		"--signal", "direct", "--namespace", "carbon", "--image", "example.org/cs:1", "--min-replicas", "0", "--max-replicas", "4",
		"--cpu-limit", "")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	docs := strings.Split(out, "---\n")
	if got, want := len(docs), 4; got != want {
		t.Fatalf("documents=%d, want %d:\n%s", got, want, out)
	}
	var rt kserve.ServingRuntime
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &rt); err != nil {
		t.Fatalf("ServingRuntime: %v", err)
	}
	if got, want := rt.Spec.Containers[0].Image, "example.org/cs:1"; got != want {
		t.Errorf("image=%q, want %q", got, want)
	}
	for i, want := range []struct{ name, zone, uri string }{
		{"carbon-forecaster-de", "DE", "s3://bucket/prefix/direct/DE"},
		{"carbon-forecaster-se", "SE", "s3://bucket/prefix/direct/SE"},
		{"carbon-forecaster-generic", "generic", "s3://bucket/prefix/direct/generic"},
	} {
		var is kserve.InferenceService
		if err := yaml.UnmarshalStrict([]byte(docs[i+1]), &is); err != nil {
			t.Fatalf("InferenceService %d: %v", i, err)
		}
		m := is.Spec.Predictor.Model
		if is.Name != want.name || is.Namespace != "carbon" || is.Labels["carbongate.io/zone"] != want.zone || *m.StorageURI != want.uri {
			t.Errorf("InferenceService %d = %s/%s zone=%q uri=%q, want carbon/%s zone=%q uri=%q",
				i, is.Namespace, is.Name, is.Labels["carbongate.io/zone"], *m.StorageURI, want.name, want.zone, want.uri)
		}
		if p := is.Spec.Predictor; p.MinReplicas == nil || *p.MinReplicas != 0 || p.MaxReplicas != 4 {
			t.Errorf("replicas=%v/%d, want 0/4", p.MinReplicas, p.MaxReplicas)
		}
		if _, ok := m.Resources.Limits["cpu"]; ok {
			t.Errorf("cpu limit set despite --cpu-limit \"\"")
		}
	}
}

func TestDeployRenderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note string
		args []string
		code int
		want string
	}{
		{"no subcommand", []string{"deploy"}, 2, "subcommand is required"},
		{"unknown subcommand", []string{"deploy", "apply"}, 2, `unknown subcommand "apply"`},
		{"help", []string{"deploy", "-h"}, 0, "usage: carbonctl deploy render"},
		{"render help", []string{"deploy", "render", "-h"}, 0, "-storage-uri"},
		{"missing flags", []string{"deploy", "render", "--zones", "DE"}, 2, "--zones and --storage-uri are required"},
		{"bad zone", []string{"deploy", "render", "--zones", "D E", "--storage-uri", "s3://b"}, 2, "--zones"},
		{"bad uri", []string{"deploy", "render", "--zones", "DE", "--storage-uri", "http://b"}, 2, "--storage-uri: storage URI \"http://b\" must start with s3://, gs:// or pvc://"},
		{"bad namespace", []string{"deploy", "render", "--zones", "DE", "--storage-uri", "s3://b", "--namespace", "Bad_NS"}, 2, "--namespace"},
		{"bad signal", []string{"deploy", "render", "--zones", "DE", "--storage-uri", "s3://b", "--signal", "both"}, 2, "--signal"},
		{"bad quantity", []string{"deploy", "render", "--zones", "DE", "--storage-uri", "s3://b", "--memory-limit", "much"}, 2, "--memory-limit"},
		{"stray argument", []string{"deploy", "render", "--zones", "DE", "--storage-uri", "s3://b", "extra"}, 2, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runCtl(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit=%d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if tt.code == 0 && !strings.Contains(out, tt.want) {
				t.Errorf("help: stdout lacks %q:\n%s", tt.want, out)
			}
			if tt.code != 0 && !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if tt.code != 0 && out != "" {
				t.Errorf("stdout on error:\n%s", out)
			}
		})
	}
}

// TestDeployExampleUpToDate: deploy/kserve/example.yaml, which the README
// shows, is exactly what the command in its first line renders today.
func TestDeployExampleUpToDate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kserve", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	args, ok := strings.CutPrefix(first, "# Rendered by: carbonctl ")
	if !ok {
		t.Fatalf("first line %q does not name the command", first)
	}
	code, stdout, stderr := runCtl(t, strings.Fields(args)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the second comment line
	if rest != stdout {
		t.Fatalf("deploy/kserve/example.yaml is stale; regenerate it with: carbonctl %s", args)
	}
}

// TestDeployRenderWebhook: --webhook writes deploy/webhook's configuration
// with the CA file as caBundle (and --url, --failure-policy applied);
// mistakes are usage errors naming the flag.
func TestDeployRenderWebhook(t *testing.T) {
	t.Parallel()
	ca, key, err := cert.GenerateSelfSignedCertKey("carbongate.carbongate.svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCtl(t, "deploy", "render", "--webhook", "--ca-bundle", caFile,
		"--url", "https://127.0.0.1:8443/v1/admission/mutate", "--failure-policy", "Ignore")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var c admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict([]byte(out), &c); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	w := c.Webhooks[0]
	if !bytes.Equal(w.ClientConfig.CABundle, ca) || w.ClientConfig.URL == nil || *w.ClientConfig.URL != "https://127.0.0.1:8443/v1/admission/mutate" ||
		w.ClientConfig.Service != nil || *w.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("rendered webhook %+v", w)
	}

	for _, tc := range []struct {
		note string
		args []string
		want string
	}{
		{"no bundle", nil, "--ca-bundle is required"},
		{"missing file", []string{"--ca-bundle", filepath.Join(dir, "absent")}, "--ca-bundle: open"},
		{"key file", []string{"--ca-bundle", keyFile}, "--ca-bundle: the CA bundle holds a RSA PRIVATE KEY block"},
		{"http url", []string{"--ca-bundle", caFile, "--url", "http://127.0.0.1/x"}, "--url: webhook URL"},
		{"policy", []string{"--ca-bundle", caFile, "--failure-policy", "Never"}, "--failure-policy"},
		{"with backfill", []string{"--backfill", "--ca-bundle", caFile}, "--backfill and --webhook"},
		{"stray argument", []string{"--ca-bundle", caFile, "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runCtl(t, append([]string{"deploy", "render", "--webhook"}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, stderr, tc.want)
			}
		})
	}
}
