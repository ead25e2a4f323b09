//go:build interop

package helm

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/test/services"
)

// TestControllerRBACMatchesDeploy checks that controller.enabled renders
// the rules of deploy/controller/rbac.yaml (which the Kubernetes tests run
// the controller with) plus controller.providerRules, bound to the
// chart's ServiceAccount, and the controller's flags; disabled, none of it.
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
	extra := rbacv1.PolicyRule{APIGroups: []string{"compute.azure.com"}, Resources: []string{"virtualmachines"}, Verbs: []string{"get", "create"}}
	b, _ := yaml.Marshal(map[string]any{"controller": map[string]any{"enabled": true, "providerRules": []rbacv1.PolicyRule{extra}}})
	got := decodeAll(t, render(t, "carbongate", "carbon", string(b)))
	if len(got.ClusterRoles) != 1 || len(got.ClusterBindings) != 1 {
		t.Fatalf("rendered %d ClusterRoles, %d bindings; want 1 each", len(got.ClusterRoles), len(got.ClusterBindings))
	}
	if rules := append(slices.Clone(want.ClusterRoles[0].Rules), extra); !equality.Semantic.DeepEqual(got.ClusterRoles[0].Rules, rules) {
		t.Errorf("the chart's controller rules differ from deploy/controller/rbac.yaml's plus providerRules:\n%+v\nwant\n%+v", got.ClusterRoles[0].Rules, rules)
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
	if !slices.Contains(args, "--controller") || !slices.Contains(args, "--controller-namespace=carbon") {
		t.Errorf("args %v, want --controller with the Lease in the release namespace", args)
	}
	off := decodeAll(t, render(t, "carbongate", "carbon", "{}"))
	if len(off.ClusterRoles) != 0 || slices.Contains(off.Deployments[0].Spec.Template.Spec.Containers[0].Args, "--controller") {
		t.Errorf("controller disabled: %d ClusterRoles, args %v; want none", len(off.ClusterRoles), off.Deployments[0].Spec.Template.Spec.Containers[0].Args)
	}
}
