package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

func testParams() *params {
	return &params{
		Bin: "bin", Models: ".cache/models/abc", ReplayStart: "2021-06-01T00:00:00Z", ReplaySpeed: 360, Port: 34567,
		TLSCert: "/s/carbongate/tls.crt", TLSKey: "/s/carbongate/tls.key", ClientCA: "/s/carbongate/client-ca.crt",
		DecisionKey: "/s/carbongate/decision.key", Webhook: "/s/carbongate/webhook.yaml", Karmada: "/s/karmada/admin.kubeconfig",
		Host: "member-se", HostKubeconfig: "/s/member-se/admin.kubeconfig",
		Members: []member{{Name: "member-se", Provider: "azure", Region: "swedencentral", Kubeconfig: "/s/member-se/admin.kubeconfig"},
			{Name: "member-de", Provider: "gcp", Region: "europe-west3", Kubeconfig: "/s/member-de/admin.kubeconfig"}},
	}
}

// TestCommandLine: the printed carbongate command is its arguments, each
// flag beside its value, in lines of at most 100 characters.
func TestCommandLine(t *testing.T) {
	p := testParams()
	args := p.carbongateArgs()
	line := commandLine(args)
	if got := strings.Fields(strings.ReplaceAll(line, "\\\n", " ")); !slices.Equal(got, args) {
		t.Fatalf("the command line splits into\n%q\nwant\n%q", got, args)
	}
	for _, l := range strings.Split(line, "\n") {
		if len(l) > 100 && strings.Count(strings.TrimSpace(strings.TrimSuffix(l, " \\")), " ") > 1 {
			t.Errorf("line of %d characters holds more than one flag: %q", len(l), l)
		}
		if strings.HasPrefix(strings.TrimSpace(l), "/s/") {
			t.Errorf("a value begins a line, apart from its flag: %q", l)
		}
	}
}

// TestCarbongateArgs: carbongate serves the binding webhook over TLS at
// the registered URL, requires Karmada's client certificate, reads
// Karmada's API server and runs its controller on its own cluster with the
// shared decision key.
func TestCarbongateArgs(t *testing.T) {
	p := testParams()
	args := p.carbongateArgs()
	flag := func(name string) string {
		i := slices.Index(args, "--"+name)
		if i < 0 || i+1 == len(args) || strings.HasPrefix(args[i+1], "--") {
			return ""
		}
		return args[i+1]
	}
	for name, want := range map[string]string{"addr": "127.0.0.1:34567", "karmada-kubeconfig": p.Karmada, "kubeconfig": p.HostKubeconfig,
		"tls-cert": p.TLSCert, "tls-key": p.TLSKey, "admission-client-ca": p.ClientCA, "decision-key-file": p.DecisionKey, "replay-speed": "360"} {
		if got := flag(name); got != want {
			t.Errorf("--%s %q, want %q", name, got, want)
		}
	}
	for _, f := range []string{"--admission", "--controller"} {
		if !slices.Contains(args, f) {
			t.Errorf("args %v lack %s", args, f)
		}
	}
	if args[0] != filepath.Join("bin", "carbongate") {
		t.Errorf("runs %s, want bin/carbongate", args[0])
	}
}

// TestWebhookYAML: the registration decodes strictly into the API type and
// sends CREATE and UPDATE of ResourceBindings to carbongate's URL, trusting
// its CA.
func TestWebhookYAML(t *testing.T) {
	p := testParams()
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	b, err := webhookYAML(p.webhookURL(), ca)
	if err != nil {
		t.Fatal(err)
	}
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if cfg.Kind != "MutatingWebhookConfiguration" || len(cfg.Webhooks) != 1 {
		t.Fatalf("%s", b)
	}
	w := cfg.Webhooks[0]
	if w.ClientConfig.URL == nil || *w.ClientConfig.URL != "https://127.0.0.1:34567/v1/admission/mutate" || string(w.ClientConfig.CABundle) != string(ca) {
		t.Errorf("clientConfig %+v", w.ClientConfig)
	}
	r := w.Rules[0]
	if !slices.Equal(r.Resources, []string{"resourcebindings"}) || !slices.Equal(r.APIGroups, []string{"work.karmada.io"}) ||
		!slices.Equal(r.Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}) {
		t.Errorf("rule %+v, want CREATE and UPDATE of work.karmada.io resourcebindings", r)
	}
}

// TestInstructions: the printed lines name every member with its grid
// zone, the kubeconfigs, the webhook file and an example that exists.
func TestInstructions(t *testing.T) {
	p := testParams()
	out := p.instructions()
	for _, s := range []string{"export KUBECONFIG=" + p.Karmada, "kubectl apply -f " + p.Webhook, "member-se  azure swedencentral (grid zone SE)",
		"member-de  gcp europe-west3 (grid zone DE)", "--kubeconfig " + p.HostKubeconfig, "Ctrl-C"} {
		if !strings.Contains(out, s) {
			t.Errorf("instructions lack %q:\n%s", s, out)
		}
	}
	const example = "deploy/local/karmada-job.yaml"
	if !strings.Contains(out, "kubectl apply -f "+example) {
		t.Errorf("instructions do not apply %s", example)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "..", example)); err != nil {
		t.Error(err)
	}
}
