//go:build interop

package helm

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/test/services"
)

// opaBundleFiles reads the bundle of deploy/opa as OPA loads it: the
// manifest, the policies (not their tests) and the data.json files, by
// path relative to the bundle root.
func opaBundleFiles(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join(services.RepoRoot(t), "deploy", "opa")
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		base := d.Name()
		if base == ".manifest" || base == "data.json" || strings.HasSuffix(base, ".rego") && !strings.HasSuffix(base, "_test.rego") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading deploy/opa: %v", err)
	}
	if out[".manifest"] == "" || !slices.ContainsFunc(slices.Collect(maps.Keys(out)), func(k string) bool { return strings.HasSuffix(k, ".rego") }) {
		t.Fatalf("deploy/opa holds no bundle (a .manifest and policies): %v", slices.Sorted(maps.Keys(out)))
	}
	return out
}

// TestOPABundleInChart checks that OPA, with the bundle shipped in the
// chart, sees exactly deploy/opa's bundle at the same paths, and that the
// chart's configuration matches what the policy reads: the default decision
// is a rule of the bundle and every CARBONGATE_* variable set is one the
// policy reads.
func TestOPABundleInChart(t *testing.T) {
	t.Parallel()
	want := opaBundleFiles(t)
	o := decodeAll(t, render(t, "carbongate", "policy", "admission: {mode: opa, tls: {secretName: opa-tls}}"))
	d := o.deployment("admission-opa")
	if d == nil {
		t.Fatal("no OPA Deployment")
	}
	spec := d.Spec.Template.Spec
	ctr := container(t, &spec, "opa")
	bundleDir := ctr.Args[slices.Index(ctr.Args, "--bundle")+1]
	got := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		rel, ok := strings.CutPrefix(m.MountPath, bundleDir+"/")
		if !ok || m.SubPath == "" {
			continue
		}
		var cm *corev1.ConfigMap
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				cm = o.configMap(d.Namespace, v.ConfigMap.Name)
			}
		}
		if cm == nil {
			t.Fatalf("mount %s: no rendered ConfigMap behind it", m.MountPath)
		}
		got[rel] = cm.Data[m.SubPath]
	}
	if !maps.Equal(got, want) {
		t.Errorf("OPA sees %v,\nwant deploy/opa's bundle %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s differs from deploy/opa/%s", k, k)
			}
		}
	}

	cm := o.configMap(d.Namespace, configMapOfMount(spec, *ctr, flagValues(ctr.Args)["config-file"]))
	var cfg struct {
		DefaultDecision string `json:"default_decision"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	pkg, rule := path.Split(strings.TrimPrefix(cfg.DefaultDecision, "/"))
	pkg = strings.ReplaceAll(strings.TrimSuffix(pkg, "/"), "/", ".")
	ruleRE := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(rule) + `\s*(:=|=|if|contains)`)
	found := false
	var policies strings.Builder
	for p, src := range want {
		if strings.HasSuffix(p, ".rego") {
			policies.WriteString(src)
			if strings.Contains(src, "\npackage "+pkg+"\n") || strings.HasPrefix(src, "package "+pkg+"\n") {
				found = found || ruleRE.MatchString(src)
			}
		}
	}
	if !found {
		t.Errorf("default_decision %s: no rule %s in package %s of deploy/opa", cfg.DefaultDecision, rule, pkg)
	}
	for _, e := range ctr.Env {
		read := strings.Contains(policies.String(), `"`+e.Name+`"`) || strings.Contains(policies.String(), "env."+e.Name)
		if strings.HasPrefix(e.Name, "CARBONGATE_") && !read {
			t.Errorf("OPA env %s is not read by the policy", e.Name)
		}
	}
}

// TestWebhookMatchesDeploy checks that admission.mode carbongate renders
// the webhook of deploy/webhook/mutatingwebhookconfiguration.yaml: with a
// release named carbongate in namespace carbongate and default values the
// webhook entries are equal (the caBundle placeholder filled in).
func TestWebhookMatchesDeploy(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "webhook", "mutatingwebhookconfiguration.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := splitDocs(strings.ReplaceAll(string(raw), "${CA_BUNDLE}", testCA))
	if err != nil {
		t.Fatal(err)
	}
	want := decodeAll(t, m).Webhooks
	got := decodeAll(t, render(t, "carbongate", "carbongate",
		"admission: {mode: carbongate, tls: {secretName: carbongate-webhook-tls, caBundle: "+testCA+"}}\ncontroller: {enabled: true}")).Webhooks
	if len(want) != 1 || len(got) != 1 {
		t.Fatalf("%d webhook configurations in deploy/webhook, %d rendered; want 1 each", len(want), len(got))
	}
	if !equality.Semantic.DeepEqual(got[0].Webhooks, want[0].Webhooks) {
		gy, _ := yaml.Marshal(got[0].Webhooks)
		wy, _ := yaml.Marshal(want[0].Webhooks)
		t.Errorf("the chart's webhook differs from deploy/webhook's:\n--- chart\n%s--- deploy/webhook\n%s", gy, wy)
	}
}

// TestOPAClientCA checks that admission.clientCA makes OPA refuse every
// client without a certificate of that CA (--authentication=tls with the
// Secret's key as --tls-ca-cert-file), and that OPA authenticates no one
// without it.
func TestOPAClientCA(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, values string
		secret, key  string
	}{
		{name: "none", values: "admission: {mode: opa, tls: {secretName: opa-tls}}"},
		{name: "client CA", values: "admission: {mode: opa, tls: {secretName: opa-tls}, clientCA: {secretName: apiserver-ca, key: cas.pem}}",
			secret: "apiserver-ca", key: "cas.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := decodeAll(t, render(t, "carbongate", "policy", tc.values)).deployment("admission-opa")
			if d == nil {
				t.Fatal("no OPA Deployment")
			}
			spec := d.Spec.Template.Spec
			ctr := container(t, &spec, "opa")
			f := flagValues(ctr.Args)
			if tc.secret == "" {
				if a, ok := f["authentication"]; ok {
					t.Fatalf("--authentication=%s without admission.clientCA", a)
				}
				return
			}
			if f["authentication"] != "tls" {
				t.Fatalf("--authentication=%q, want tls", f["authentication"])
			}
			dir, file := path.Split(f["tls-ca-cert-file"])
			var volume string
			for _, m := range ctr.VolumeMounts {
				if m.MountPath == strings.TrimSuffix(dir, "/") {
					volume = m.Name
				}
			}
			for _, v := range spec.Volumes {
				if v.Name != volume || v.Secret == nil {
					continue
				}
				if v.Secret.SecretName != tc.secret || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != tc.key || v.Secret.Items[0].Path != file {
					t.Fatalf("--tls-ca-cert-file=%s is on Secret volume %+v, want key %s of Secret %s", f["tls-ca-cert-file"], v.Secret, tc.key, tc.secret)
				}
				return
			}
			t.Fatalf("--tls-ca-cert-file=%s is on no Secret volume", f["tls-ca-cert-file"])
		})
	}
}
