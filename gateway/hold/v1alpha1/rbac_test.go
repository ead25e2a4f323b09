package v1alpha1

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// controllerNeeds is what the controller does with VmTemplates: it watches
// them (informer and reads) and replaces their status.
var controllerNeeds = []struct{ resource, verb string }{
	{Resource, "get"}, {Resource, "list"}, {Resource, "watch"},
	{Resource + "/status", "update"},
}

// TestRBACGrantsTheController: deploy/controller/rbac.yaml's ClusterRole
// and the chart's controller ClusterRole grant the controller what it
// needs on Group/Resource. (test/helm checks that the two hold the same
// rules once rendered.)
func TestRBACGrantsTheController(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..", "deploy")
	raw, err := os.ReadFile(filepath.Join(root, "controller", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---\n")[0]), &role); err != nil || role.Kind != "ClusterRole" {
		t.Fatalf("deploy/controller/rbac.yaml: the first document is not a ClusterRole (%v)", err)
	}
	check(t, "deploy/controller/rbac.yaml", role.Rules)
	raw, err = os.ReadFile(filepath.Join(root, "helm", "carbongate", "templates", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "the chart's templates/rbac.yaml", chartControllerRules(t, string(raw)))
}

func check(t *testing.T, where string, rules []rbacv1.PolicyRule) {
	t.Helper()
	for _, n := range controllerNeeds {
		if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return grants(r, Group, n.resource, n.verb) }) {
			t.Errorf("%s: the controller's ClusterRole does not grant %s on %s.%s", where, n.verb, n.resource, Group)
		}
	}
}

func grants(r rbacv1.PolicyRule, group, resource, verb string) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	return has(r.APIGroups, group) && has(r.Resources, resource) && has(r.Verbs, verb)
}

// chartControllerRules returns the fixed rules of the chart's controller
// ClusterRole (the template's rules up to its first template action: the
// rules of controller.vmKinds follow).
func chartControllerRules(t *testing.T, text string) []rbacv1.PolicyRule {
	t.Helper()
	for doc := range strings.SplitSeq(text, "\n---\n") {
		if !strings.Contains(doc, "\nkind: ClusterRole\n") || !strings.Contains(doc, "-controller\"") {
			continue
		}
		_, rules, ok := strings.Cut(doc, "\nrules:\n")
		if !ok {
			break
		}
		if i := strings.Index(rules, "{{"); i >= 0 {
			rules = rules[:i]
		}
		var role struct{ Rules []rbacv1.PolicyRule }
		if err := yaml.Unmarshal([]byte("rules:\n"+rules), &role); err != nil {
			t.Fatalf("the chart's controller ClusterRole rules: %v", err)
		}
		return role.Rules
	}
	t.Fatal("the chart's templates/rbac.yaml has no controller ClusterRole")
	return nil
}
