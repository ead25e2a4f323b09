//go:build interop

package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/carbongate/carbongate/test/services"
)

// TestControllerRBACMatchesDeploy checks that controller.enabled renders
// the rules of deploy/controller/rbac.yaml (which the Kubernetes tests run
// the controller with) — with controller.vmKinds' rules in place of the
// default VM kinds' — bound to the chart's ServiceAccount, and the
// controller's flags (controller.holdMode as --hold-mode, redecide and
// redecideGain as --redecide and --redecide-gain); disabled, none
// of it.
func TestControllerRBACMatchesDeploy(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "controller", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := splitDocs(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := decodeAll(t, m)
	if len(want.ClusterRoles) != 1 || len(want.Roles) != 1 {
		t.Fatalf("deploy/controller/rbac.yaml: %d ClusterRoles, %d Roles; want 1 each", len(want.ClusterRoles), len(want.Roles))
	}
	got := decodeAll(t, render(t, "carbongate", "carbon", "controller: {enabled: true}"))
	if len(got.ClusterRoles) != 1 || len(got.ClusterBindings) != 1 {
		t.Fatalf("rendered %d ClusterRoles, %d bindings; want 1 each", len(got.ClusterRoles), len(got.ClusterBindings))
	}
	if !equality.Semantic.DeepEqual(got.ClusterRoles[0].Rules, want.ClusterRoles[0].Rules) {
		t.Errorf("the chart's controller rules differ from deploy/controller/rbac.yaml's:\n%+v\nwant\n%+v", got.ClusterRoles[0].Rules, want.ClusterRoles[0].Rules)
	}
	// Another kind in place of the defaults: its rule replaces theirs, and
	// --vm-kinds names it alone.
	fake := rbacv1.PolicyRule{APIGroups: []string{"test.carbongate.io"}, Resources: []string{"fakevms"}, Verbs: []string{"get", "create"}}
	custom := decodeAll(t, render(t, "carbongate", "carbon", `controller: {enabled: true, vmKinds: [{provider: azure, apiGroup: test.carbongate.io, kind: FakeVM, resource: fakevms}]}`))
	base := slices.DeleteFunc(slices.Clone(want.ClusterRoles[0].Rules), func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Verbs, fake.Verbs) })
	if rules := append(base, fake); !equality.Semantic.DeepEqual(custom.ClusterRoles[0].Rules, rules) {
		t.Errorf("with controller.vmKinds the rules are\n%+v\nwant\n%+v", custom.ClusterRoles[0].Rules, rules)
	}
	if args := custom.Deployments[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--vm-kinds=azure=test.carbongate.io/FakeVM") {
		t.Errorf("args %v, want --vm-kinds=azure=test.carbongate.io/FakeVM", args)
	}
	for _, o := range []*Objects{got, custom} {
		checkGrantsOnlyVMKinds(t, o.ClusterRoles[0].Rules, o.Deployments[0].Spec.Template.Spec.Containers[0].Args)
	}
	var lease *rbacv1.Role
	for _, r := range got.Roles {
		if r.Labels["app.kubernetes.io/component"] == "controller" {
			lease = r
		}
	}
	if lease == nil || !equality.Semantic.DeepEqual(lease.Rules, want.Roles[0].Rules) {
		t.Errorf("the chart's Lease role %+v, want the rules of deploy/controller/rbac.yaml", lease)
	}
	args := got.Deployments[0].Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--controller") || !slices.Contains(args, "--controller-namespace=carbon") || !slices.Contains(args, "--hold-mode=enforce") {
		t.Errorf("args %v, want --controller with the Lease in the release namespace, holding by default", args)
	}
	if !slices.Contains(args, "--redecide=true") || !slices.Contains(args, "--redecide-gain=0.02") {
		t.Errorf("args %v, want re-deciding with a 2 %% gain by default", args)
	}
	off1 := decodeAll(t, render(t, "carbongate", "carbon", "controller: {enabled: true, redecide: false, redecideGain: 0.2}"))
	if args := off1.Deployments[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--redecide=false") || !slices.Contains(args, "--redecide-gain=0.2") {
		t.Errorf("controller.redecide false, redecideGain 0.2: args %v", args)
	}
	shadow := decodeAll(t, render(t, "carbongate", "carbon", "controller: {enabled: true, holdMode: shadow}"))
	if args := shadow.Deployments[0].Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--hold-mode=shadow") {
		t.Errorf("controller.holdMode shadow: args %v, want --hold-mode=shadow", args)
	}
	checkDecisionKey(t, got, "carbongate-decision-key")
	own := decodeAll(t, render(t, "carbongate", "carbon", "controller: {enabled: true, decisionKey: {secretName: mine, key: k}}"))
	checkDecisionKey(t, own, "mine")
	off := decodeAll(t, render(t, "carbongate", "carbon", "{}"))
	if len(off.ClusterRoles) != 0 || slices.Contains(off.Deployments[0].Spec.Template.Spec.Containers[0].Args, "--controller") {
		t.Errorf("controller disabled: %d ClusterRoles, args %v; want none", len(off.ClusterRoles), off.Deployments[0].Spec.Template.Spec.Containers[0].Args)
	}
}

// checkDecisionKey checks that the gateway reads --decision-key-file from
// a volume of Secret name, and that the chart renders that Secret, with a
// key long enough, only when it is its own (carbongate-decision-key).
func checkDecisionKey(t *testing.T, o *Objects, name string) {
	t.Helper()
	pod := o.Deployments[0].Spec.Template.Spec
	if !slices.Contains(pod.Containers[0].Args, "--decision-key-file=/etc/carbongate/decision-key/key") {
		t.Errorf("args %v, want --decision-key-file", pod.Containers[0].Args)
	}
	vol := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == name })
	mount := slices.IndexFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
		return vol >= 0 && m.Name == pod.Volumes[vol].Name && m.MountPath == "/etc/carbongate/decision-key" && m.ReadOnly
	})
	if vol < 0 || mount < 0 || len(pod.Volumes[vol].Secret.Items) != 1 || pod.Volumes[vol].Secret.Items[0].Path != "key" {
		t.Errorf("volumes %+v, mounts %+v: want Secret %s's key at /etc/carbongate/decision-key/key", pod.Volumes, pod.Containers[0].VolumeMounts, name)
	}
	var rendered []string
	for _, s := range o.Secrets {
		rendered = append(rendered, s.Name)
		if s.Name == name && vol >= 0 && len(s.Data[pod.Volumes[vol].Secret.Items[0].Key]) < 32 {
			t.Errorf("Secret %s: key of %d bytes, want at least 32", s.Name, len(s.Data["key"]))
		}
	}
	if own := name == "carbongate-decision-key"; own != slices.Contains(rendered, name) || len(rendered) > 1 {
		t.Errorf("Secrets rendered %v; want only %s, and only when it is the chart's", rendered, name)
	}
}

// checkGrantsOnlyVMKinds: the controller may create nothing but events and
// the provider objects of its --vm-kinds, and nothing at all in the RBAC or
// admission groups, nor anything through a wildcard.
func checkGrantsOnlyVMKinds(t *testing.T, rules []rbacv1.PolicyRule, args []string) {
	t.Helper()
	var kinds string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--vm-kinds="); ok {
			kinds = v
		}
	}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if g == "*" || g == "rbac.authorization.k8s.io" || g == "admissionregistration.k8s.io" || slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") {
				t.Errorf("rule %+v grants too much", r)
			}
			if !slices.Contains(r.Verbs, "create") || slices.Contains(r.Resources, "events") {
				continue
			}
			if g == "" || !strings.Contains(","+kinds, "="+g+"/") {
				t.Errorf("rule %+v lets the controller create in group %q, which --vm-kinds=%s does not name", r, g, kinds)
			}
		}
	}
}
