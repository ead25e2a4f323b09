//go:build interop

package helm

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
)

// The Karmada resources the chart's objects for Karmada's API server name.
const (
	bindingGroup    = "work.karmada.io"
	bindingVersion  = "v1alpha2"
	bindingResource = "resourcebindings"
)

// karmadaSettings are the values of the karmada key, the chart's defaults
// under a case's own.
type karmadaSettings struct {
	Enabled          bool   `json:"enabled"`
	Side             string `json:"side"`
	HostNamespace    string `json:"hostNamespace"`
	ScheduleAhead    string `json:"scheduleAhead"`
	KubeconfigSecret struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	} `json:"kubeconfigSecret"`
	Webhook struct {
		URL           string `json:"url"`
		CABundle      string `json:"caBundle"`
		FailurePolicy string `json:"failurePolicy"`
	} `json:"webhook"`
	RBAC struct {
		ServiceAccount struct {
			Create      bool   `json:"create"`
			Name        string `json:"name"`
			TokenSecret bool   `json:"tokenSecret"`
		} `json:"serviceAccount"`
		Subjects      []rbacv1.Subject `json:"subjects"`
		WorkloadKinds []struct {
			APIGroup  string   `json:"apiGroup"`
			Resources []string `json:"resources"`
		} `json:"workloadKinds"`
	} `json:"rbac"`
}

// caseValues are a case's values over the chart's values.yaml.
type caseValues struct {
	Karmada   karmadaSettings `json:"karmada"`
	Admission struct {
		TimeoutSeconds int32 `json:"timeoutSeconds"`
		TLS            struct {
			CABundle string `json:"caBundle"`
		} `json:"tls"`
	} `json:"admission"`
	Service struct {
		Port int32 `json:"port"`
	} `json:"service"`
}

func valuesOf(t *testing.T, c chartCase) caseValues {
	t.Helper()
	var defaults, own map[string]any
	if err := yaml.Unmarshal(chartValuesFile(t), &defaults); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(c.values), &own); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(merge(defaults, own))
	if err != nil {
		t.Fatal(err)
	}
	var v caseValues
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func chartValuesFile(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// merge is Helm's merge of values: maps key by key, anything else replaced.
func merge(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = merge(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}

// karmadaWebhook reports whether w is the webhook for Karmada's API
// server: it targets ResourceBindings.
func karmadaWebhook(w admissionregistrationv1.MutatingWebhook) bool {
	return slices.ContainsFunc(w.Rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		return slices.Contains(r.APIGroups, bindingGroup)
	})
}

// checkKarmadaHost: with karmada.enabled the gateway gets
// --karmada-kubeconfig, a file of the Secret the values name, and signs its
// decisions with the shared key (every replica the same); without, neither.
func checkKarmadaHost(t *testing.T, c chartCase, d *appsv1.Deployment, ctr *corev1.Container) {
	t.Helper()
	k := valuesOf(t, c).Karmada
	flags := flagValues(ctr.Args)
	path, set := flags["karmada-kubeconfig"]
	if set != k.Enabled {
		t.Fatalf("gateway: --karmada-kubeconfig set %v, karmada.enabled %v", set, k.Enabled)
	}
	if !set {
		return
	}
	spec := d.Spec.Template.Spec
	if !mountedFile(spec, *ctr, path) {
		t.Errorf("gateway: --karmada-kubeconfig=%s is not on a mounted Secret volume", path)
	}
	found := false
	for _, m := range ctr.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil || !strings.HasPrefix(path, m.MountPath+"/") {
				continue
			}
			file := strings.TrimPrefix(path, m.MountPath+"/")
			found = v.Secret.SecretName == k.KubeconfigSecret.Name && slices.ContainsFunc(v.Secret.Items, func(i corev1.KeyToPath) bool {
				return i.Key == k.KubeconfigSecret.Key && i.Path == file
			}) && m.ReadOnly
		}
	}
	if !found {
		t.Errorf("gateway: --karmada-kubeconfig=%s is not key %s of Secret %s mounted read-only", path, k.KubeconfigSecret.Key, k.KubeconfigSecret.Name)
	}
	if got := flags["karmada-schedule-ahead"]; got != k.ScheduleAhead {
		t.Errorf("gateway: --karmada-schedule-ahead=%q, want karmada.scheduleAhead %q", got, k.ScheduleAhead)
	}
	if !mountedFile(spec, *ctr, flags["decision-key-file"]) {
		t.Errorf("gateway: with Karmada, --decision-key-file=%q is not on a mounted Secret volume: replicas would sign with keys of their own", flags["decision-key-file"])
	}
}

// checkKarmadaAPIServer checks a release for Karmada's API server: the
// webhook for ResourceBindings (CREATE and UPDATE, the failure policy of
// the values, HTTPS to the host release's Service or the URL given, the CA
// bundle), the ClusterRole of exactly the rights carbongate needs there,
// bound to the subjects of the values, and nothing else.
func checkKarmadaAPIServer(t *testing.T, c chartCase, o *Objects) {
	t.Helper()
	v := valuesOf(t, c)
	k := v.Karmada
	for _, x := range o.All {
		if x.Doc.Kind == "CustomResourceDefinition" {
			continue
		}
		if !strings.HasPrefix(x.Doc.Source, "carbongate/templates/karmada-apiserver.yaml") {
			t.Errorf("%s comes from %s; a release for Karmada's API server renders karmada-apiserver.yaml alone", x.Doc.ID(), x.Doc.Source)
		}
	}
	checkWebhooks(t, o)
	if len(o.Webhooks) != 1 || len(o.Webhooks[0].Webhooks) != 1 {
		t.Fatalf("%d webhook configurations, want one with one webhook", len(o.Webhooks))
	}
	w := o.Webhooks[0].Webhooks[0]
	id := "webhook " + w.Name
	want := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{bindingGroup}, APIVersions: []string{bindingVersion},
			Resources: []string{bindingResource}, Scope: ptr(admissionregistrationv1.NamespacedScope)},
	}}
	if got, _ := json.Marshal(w.Rules); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("%s: rules %s, want %s", id, got, must(json.Marshal(want)))
	}
	if got := ptrString(w.FailurePolicy); got != k.Webhook.FailurePolicy {
		t.Errorf("%s: failurePolicy %q, want %s", id, got, k.Webhook.FailurePolicy)
	}
	if w.TimeoutSeconds == nil || *w.TimeoutSeconds != v.Admission.TimeoutSeconds {
		t.Errorf("%s: timeoutSeconds %v, want admission.timeoutSeconds %d", id, w.TimeoutSeconds, v.Admission.TimeoutSeconds)
	}
	if w.ClientConfig.Service != nil || w.ClientConfig.URL == nil {
		t.Fatalf("%s: clientConfig must be a URL (a Service would be looked up on Karmada's API server)", id)
	}
	wantURL := k.Webhook.URL
	if wantURL == "" {
		ns := k.HostNamespace
		if ns == "" {
			ns = c.ns
		}
		wantURL = "https://" + c.release + "-carbongate." + ns + ".svc:" + itoa(v.Service.Port) + "/v1/admission/mutate"
	}
	if u, err := url.Parse(*w.ClientConfig.URL); err != nil || u.Scheme != "https" || u.Path != "/v1/admission/mutate" || *w.ClientConfig.URL != wantURL {
		t.Errorf("%s: URL %q, want %q (HTTPS, carbongate's admission path)", id, *w.ClientConfig.URL, wantURL)
	}
	wantCA := k.Webhook.CABundle
	if wantCA == "" {
		wantCA = v.Admission.TLS.CABundle
	}
	if got := string(w.ClientConfig.CABundle); got != mustDecodeB64(t, wantCA) {
		t.Errorf("%s: caBundle %q, want karmada.webhook.caBundle or admission.tls.caBundle", id, got)
	}
	checkKarmadaRBAC(t, c, o, k)
}

// checkKarmadaRBAC: the ClusterRole grants what the webhook and the
// controller do on Karmada's API server and get on the workload kinds of
// the values, nothing more; its binding names it and the values' subjects.
func checkKarmadaRBAC(t *testing.T, c chartCase, o *Objects, k karmadaSettings) {
	t.Helper()
	if len(o.ClusterRoles) != 1 || len(o.ClusterBindings) != 1 {
		t.Fatalf("%d ClusterRoles, %d ClusterRoleBindings; want 1 each", len(o.ClusterRoles), len(o.ClusterBindings))
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{bindingGroup}, Resources: []string{bindingResource}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
		{APIGroups: []string{"cluster.karmada.io"}, Resources: []string{"clusters"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	for _, wk := range k.RBAC.WorkloadKinds {
		want = append(want, rbacv1.PolicyRule{APIGroups: []string{wk.APIGroup}, Resources: wk.Resources, Verbs: []string{"get"}})
	}
	role := o.ClusterRoles[0]
	if got := must(json.Marshal(role.Rules)); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("ClusterRole %s: rules\n%s\nwant\n%s", role.Name, got, must(json.Marshal(want)))
	}
	checkGrantsOnlyVMKinds(t, role.Rules, nil) // no wildcard, nothing in the RBAC or admission groups, no create but events
	b := o.ClusterBindings[0]
	if b.RoleRef != (rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}) {
		t.Errorf("ClusterRoleBinding %s: roleRef %+v, want ClusterRole %s", b.Name, b.RoleRef, role.Name)
	}
	var subjects []rbacv1.Subject
	if sa := k.RBAC.ServiceAccount; sa.Create {
		subjects = append(subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: c.ns})
		if len(o.ServiceAccounts) != 1 || o.ServiceAccounts[0].Name != sa.Name || o.ServiceAccounts[0].Namespace != c.ns {
			t.Errorf("ServiceAccounts %v, want %s in %s", o.ServiceAccounts, sa.Name, c.ns)
		}
	} else if len(o.ServiceAccounts) > 0 {
		t.Errorf("ServiceAccount rendered while karmada.rbac.serviceAccount.create is false")
	}
	checkKarmadaToken(t, c, o, k)
	for _, s := range k.RBAC.Subjects {
		if s.Kind == "ServiceAccount" {
			if s.Namespace == "" {
				s.Namespace = c.ns
			}
		} else {
			s.APIGroup = "rbac.authorization.k8s.io"
		}
		subjects = append(subjects, s)
	}
	if got := must(json.Marshal(b.Subjects)); string(got) != string(must(json.Marshal(subjects))) {
		t.Errorf("ClusterRoleBinding %s: subjects %s, want %s", b.Name, got, must(json.Marshal(subjects)))
	}
}

// checkKarmadaToken: with serviceAccount.create and tokenSecret, one
// Secret <name>-token of type kubernetes.io/service-account-token naming
// the ServiceAccount (the token controller fills it in), holding no data of
// its own; else none.
func checkKarmadaToken(t *testing.T, c chartCase, o *Objects, k karmadaSettings) {
	t.Helper()
	sa := k.RBAC.ServiceAccount
	if !sa.Create || !sa.TokenSecret {
		if len(o.Secrets) > 0 {
			t.Errorf("Secrets rendered %d while karmada.rbac.serviceAccount create %v tokenSecret %v", len(o.Secrets), sa.Create, sa.TokenSecret)
		}
		return
	}
	if len(o.Secrets) != 1 {
		t.Fatalf("%d Secrets, want the ServiceAccount's token Secret alone", len(o.Secrets))
	}
	s := o.Secrets[0]
	if s.Name != sa.Name+"-token" || s.Namespace != c.ns || s.Type != corev1.SecretTypeServiceAccountToken ||
		s.Annotations[corev1.ServiceAccountNameKey] != sa.Name || len(s.Data)+len(s.StringData) > 0 {
		t.Errorf("token Secret %s/%s type %s annotations %v, %d data keys; want %s-token in %s, %s, %s=%s, no data",
			s.Namespace, s.Name, s.Type, s.Annotations, len(s.Data)+len(s.StringData), sa.Name, c.ns, corev1.SecretTypeServiceAccountToken, corev1.ServiceAccountNameKey, sa.Name)
	}
}

// checkKarmadaNotes: a release for Karmada's API server says where the
// webhook calls and how to make carbongate's token; the host side says how
// to install that release.
func checkKarmadaNotes(t *testing.T, c chartCase, notes string) {
	t.Helper()
	k := valuesOf(t, c).Karmada
	if c.apiServer {
		for _, s := range []string{"On Karmada's API server:", "failurePolicy " + k.Webhook.FailurePolicy, "/v1/admission/mutate"} {
			if !strings.Contains(notes, s) {
				t.Errorf("NOTES.txt lacks %q:\n%s", s, notes)
			}
		}
		sa := k.RBAC.ServiceAccount
		if got := strings.Contains(notes, "create token"); got != (sa.Create && !sa.TokenSecret) {
			t.Errorf("NOTES.txt shows create token: %v, want %v (karmada.rbac.serviceAccount create and not tokenSecret)\n%s", got, sa.Create && !sa.TokenSecret, notes)
		}
		if got := strings.Contains(notes, "get secret "+sa.Name+"-token"); got != (sa.Create && sa.TokenSecret) {
			t.Errorf("NOTES.txt shows the token Secret: %v, want %v (karmada.rbac.serviceAccount create and tokenSecret)\n%s", got, sa.Create && sa.TokenSecret, notes)
		}
		return
	}
	if got := strings.Contains(notes, "--set karmada.side=apiServer"); got != k.Enabled {
		t.Errorf("NOTES.txt shows the release for Karmada's API server: %v, want %v (karmada.enabled)\n%s", got, k.Enabled, notes)
	}
}

// TestKarmadaWebhookMatchesCRD checks the resource the webhook and the
// ClusterRole name against Karmada's own ResourceBinding CRD (the one the
// federation tests install, from test/setup/karmada.sh): group, plural,
// namespaced, version served, and the fields carbongate writes (the
// cluster affinity it narrows, the scheduling suspension it holds with).
func TestKarmadaWebhookMatchesCRD(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CARBONGATE_KARMADA_DIR")
	if dir == "" {
		dir = services.Setup(t, "karmada.sh")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "crds", "work", "work.karmada.io_resourcebindings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != bindingGroup || crd.Spec.Names.Plural != bindingResource || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Fatalf("Karmada's CRD: %s %s %s, want %s %s Namespaced", crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Scope, bindingGroup, bindingResource)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == bindingVersion })
	if i < 0 || !crd.Spec.Versions[i].Served {
		t.Fatalf("Karmada's CRD does not serve %s", bindingVersion)
	}
	spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
	// "[]" steps into an array's items.
	for _, path := range [][]string{{"placement", "clusterAffinity", "clusterNames"}, {"suspension", "scheduling"}, {"resource", "apiVersion"},
		{"placement", "clusterAffinities", "[]", "clusterNames"}, {"placement", "clusterAffinities", "[]", "affinityName"}} {
		s := spec
		for _, p := range path {
			var next apiextensionsv1.JSONSchemaProps
			ok := p != "[]"
			if ok {
				next, ok = s.Properties[p]
			} else if ok = s.Items != nil && s.Items.Schema != nil; ok {
				next = *s.Items.Schema
			}
			if !ok {
				t.Errorf("Karmada's ResourceBinding has no spec.%s", strings.Join(path, "."))
				break
			}
			s = next
		}
		if path[len(path)-1] == "affinityName" && s.MaxLength != nil && *s.MaxLength < int64(len(hold.AffinityGroup)) {
			t.Errorf("Karmada's affinityName is at most %d characters: %q does not fit", *s.MaxLength, hold.AffinityGroup)
		}
	}
	o := decodeAll(t, render(t, "carbongate", "karmada-system", karmadaValues+"  side: apiServer\n"))
	w := o.Webhooks[0].Webhooks[0]
	if r := w.Rules[0]; !slices.Equal(r.APIGroups, []string{crd.Spec.Group}) || !slices.Equal(r.Resources, []string{crd.Spec.Names.Plural}) ||
		!slices.Equal(r.APIVersions, []string{crd.Spec.Versions[i].Name}) {
		t.Errorf("webhook rule %+v does not name Karmada's CRD", r)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

func mustDecodeB64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("caBundle %q: %v", s, err)
	}
	return string(b)
}

func ptrString(p *admissionregistrationv1.FailurePolicyType) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func ptr[T any](v T) *T { return &v }

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
