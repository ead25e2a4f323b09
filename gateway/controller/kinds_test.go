package controller

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

func TestParseVMKinds(t *testing.T) {
	t.Parallel()
	k, err := ParseVMKinds(DefaultVMKinds().String())
	if err != nil || k.String() != DefaultVMKinds().String() {
		t.Fatalf("round trip of the defaults: %v (%v)", k, err)
	}
	k, err = ParseVMKinds(" azure=compute.azure.com/VirtualMachine , azure=test.carbongate.io/FakeVM")
	if err != nil || len(k["azure"]) != 2 || k["azure"][1] != (schema.GroupKind{Group: "test.carbongate.io", Kind: "FakeVM"}) {
		t.Fatalf("two kinds of one provider: %v (%v)", k, err)
	}
	if k, err := ParseVMKinds(""); err != nil || len(k) != 0 {
		t.Fatalf("empty: %v (%v)", k, err)
	}
	for _, bad := range []string{"azure", "azure=VirtualMachine", "=g/K", "azure=/K", "azure=g/", "azure=g/K/x"} {
		if _, err := ParseVMKinds(bad); err == nil {
			t.Errorf("ParseVMKinds(%q) accepted", bad)
		}
	}
}

// TestRenderRefusesOtherKinds: a provider template that renders anything
// but its provider's VM kinds — a RoleBinding to cluster-admin, a core
// Pod, another provider's kind — is refused before any API call.
func TestRenderRefusesOtherKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, object string
		ok           bool
	}{
		{"the provider's VM", "apiVersion: compute.azure.com/v1api20220301\nkind: VirtualMachine\nspec: {location: '{{ .Region }}'}", true},
		{"a RoleBinding to cluster-admin", "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: vms}]", false},
		{"a Pod", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: x, image: busybox}]}", false},
		{"another provider's VM", "apiVersion: ec2.services.k8s.aws/v1alpha1\nkind: Instance\nspec: {}", false},
		{"a kind of the same name in another group", "apiVersion: evil.example.com/v1\nkind: VirtualMachine\nspec: {}", false},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: TemplatePrefix + "azure"}, Data: map[string]string{TemplateKey: tc.object}}
		r := &vmReconciler{kinds: DefaultVMKinds(), reader: newFake().WithObjects(cm).Build()}
		vm := &v1alpha1.VmTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "batch-1"}}
		vm.Spec.Provider = ptr("azure")
		obj, err := r.render(context.Background(), vm, vmStatus{Region: "swedencentral"})
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "may not create")):
			t.Errorf("%s: rendered %v (%v), want refused", tc.name, obj, err)
		}
	}
}

// TestDefaultVMKindsMatchDeploy: the kinds carbongate allows by default
// are those deploy/controller/rbac.yaml grants create and get on, and the
// chart's controller.vmKinds default.
func TestDefaultVMKindsMatchDeploy(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "controller", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal([]byte(strings.Split(string(raw), "\n---\n")[0]), &role); err != nil {
		t.Fatal(err)
	}
	var granted []string
	for _, r := range role.Rules {
		if slices.Equal(r.Verbs, []string{"get", "create"}) {
			granted = append(granted, r.APIGroups[0]+"/"+r.Resources[0])
		}
	}
	var want []string
	for _, gks := range DefaultVMKinds() {
		for _, gk := range gks {
			want = append(want, gk.Group+"/"+strings.ToLower(gk.Kind)+"s")
		}
	}
	slices.Sort(granted)
	slices.Sort(want)
	if !slices.Equal(granted, want) {
		t.Errorf("rbac.yaml grants create and get on %v, want the default kinds' %v", granted, want)
	}
	raw, err = os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "carbongate", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Controller struct {
			VMKinds []struct{ Provider, APIGroup, Kind string } `json:"vmKinds"`
		} `json:"controller"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	chart := VMKinds{}
	for _, k := range values.Controller.VMKinds {
		chart[k.Provider] = append(chart[k.Provider], schema.GroupKind{Group: k.APIGroup, Kind: k.Kind})
	}
	if chart.String() != DefaultVMKinds().String() {
		t.Errorf("the chart's controller.vmKinds %s, want the defaults %s", chart, DefaultVMKinds())
	}
}

// TestKubeUpTemplateIsAllowed: the provider template make kube-up suggests
// (deploy/local/vmtemplate.yaml) renders a kind the defaults allow.
func TestKubeUpTemplateIsAllowed(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "local", "vmtemplate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		var c corev1.ConfigMap
		if yaml.Unmarshal([]byte(doc), &c) == nil && c.Kind == "ConfigMap" {
			cm = &c
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap in deploy/local/vmtemplate.yaml")
	}
	r := &vmReconciler{kinds: DefaultVMKinds(), reader: newFake().WithObjects(cm).Build()}
	vm := &v1alpha1.VmTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: "batch-1"}}
	vm.Spec.MinCPU = ptr[int64](4)
	obj, err := r.render(context.Background(), vm, vmStatus{Region: "swedencentral", Zone: "SE", Start: "2021-06-02T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if loc, _, _ := unstructured.NestedString(obj.Object, "spec", "location"); obj.GetKind() != "VirtualMachine" || loc != "swedencentral" {
		t.Errorf("rendered %v, want an azure VirtualMachine in swedencentral", obj.Object)
	}
}
