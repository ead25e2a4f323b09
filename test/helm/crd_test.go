//go:build interop

package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/carbongate/carbongate/test/services"
)

// TestChartCRD checks the CRD the chart installs (crds/): it is
// deploy/crd/vmtemplate.yaml, decodes strictly into apiextensions/v1, and
// its schemas are structural by the API server's own rules
// (apiserver/schema). The API server's full CRD validator
// (apis/apiextensions/validation) needs github.com/google/cel-go, which is
// not in go.sum, so it is not run.
func TestChartCRD(t *testing.T) {
	t.Parallel()
	o := decodeAll(t, render(t, "carbongate", "carbon", "{}"))
	if len(o.CRDs) != 1 {
		t.Fatalf("the chart installs %d CRDs, want the VmTemplate one", len(o.CRDs))
	}
	got := o.CRDs[0]
	raw, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "deploy", "crd", "vmtemplate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := splitDocs(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if want := decodeAll(t, m).CRDs; len(want) != 1 || !equality.Semantic.DeepEqual(got, want[0]) {
		t.Errorf("crds/ of the chart is not deploy/crd/vmtemplate.yaml")
	}
	if got.Spec.Group != "carbongate.io" || got.Spec.Names.Kind != "VmTemplate" || got.Name != got.Spec.Names.Plural+"."+got.Spec.Group {
		t.Errorf("CRD %s: group %s kind %s plural %s", got.Name, got.Spec.Group, got.Spec.Names.Kind, got.Spec.Names.Plural)
	}
	served := false
	for _, v := range got.Spec.Versions {
		served = served || v.Name == "v1alpha1" && v.Served && v.Storage
	}
	if !served {
		t.Errorf("CRD %s: v1alpha1 is not served and stored", got.Name)
	}

	crd := got.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	for i, v := range internal.Spec.Versions {
		fld := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		sch := v.Schema
		if sch == nil { // the internal version holds a schema shared by all versions here
			sch = internal.Spec.Validation
		}
		if sch == nil || sch.OpenAPIV3Schema == nil {
			t.Errorf("%s: no schema", fld)
			continue
		}
		st, err := structuralschema.NewStructural(sch.OpenAPIV3Schema)
		if err != nil {
			t.Errorf("%s: not structural: %v", fld, err)
			continue
		}
		if errs := structuralschema.ValidateStructural(fld, st); len(errs) > 0 {
			t.Errorf("%s: %v", fld, errs.ToAggregate())
		}
		checkPatterns(t, fld, sch.OpenAPIV3Schema)
	}
}

// checkPatterns compiles every pattern of the schema (RE2 here; the API
// server's ECMA dialect accepts what this test's patterns use).
func checkPatterns(t *testing.T, fld *field.Path, s *apiextensions.JSONSchemaProps) {
	t.Helper()
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			t.Errorf("%s.pattern %q: %v", fld, s.Pattern, err)
		}
	}
	for name, p := range s.Properties {
		checkPatterns(t, fld.Child("properties", name), &p)
	}
	if s.Items != nil && s.Items.Schema != nil {
		checkPatterns(t, fld.Child("items"), s.Items.Schema)
	}
}
