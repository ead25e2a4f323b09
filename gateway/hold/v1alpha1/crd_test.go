package v1alpha1

import (
	"cmp"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/forecast/regions"
)

// props is the part of an OpenAPI v3 schema the check reads.
type props struct {
	Type       string           `json:"type"`
	Format     string           `json:"format"`
	Required   []string         `json:"required"`
	Enum       []string         `json:"enum"`
	Properties map[string]props `json:"properties"`
	Items      *props           `json:"items"`
}

type crd struct {
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind, ListKind, Plural, Singular string
		} `json:"names"`
		Versions []struct {
			Name          string `json:"name"`
			Served        bool   `json:"served"`
			Storage       bool   `json:"storage"`
			Subresources  map[string]any
			Schema        struct{ OpenAPIV3Schema props }
			PrinterColumn []struct{ Name, JSONPath string } `json:"additionalPrinterColumns"`
		} `json:"versions"`
	} `json:"spec"`
}

func readCRD(t *testing.T) crd {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crd", "vmtemplate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c crd
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("deploy/crd/vmtemplate.yaml: %v", err)
	}
	return c
}

// TestCRDNames: the CRD serves the group, version, kind and resource
// this package names, with a status subresource.
func TestCRDNames(t *testing.T) {
	t.Parallel()
	c := readCRD(t)
	n := c.Spec.Names
	if c.Spec.Group != Group || n.Kind != Kind || n.ListKind != ListKind || n.Plural != Resource || c.Spec.Scope != "Namespaced" {
		t.Errorf("CRD group %s kind %s list %s plural %s scope %s, want %s %s %s %s Namespaced", c.Spec.Group, n.Kind, n.ListKind, n.Plural, c.Spec.Scope, Group, Kind, ListKind, Resource)
	}
	if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Name != Version || !c.Spec.Versions[0].Served || !c.Spec.Versions[0].Storage {
		t.Fatalf("CRD versions %+v, want %s alone, served and stored", c.Spec.Versions, Version)
	}
	if _, ok := c.Spec.Versions[0].Subresources["status"]; !ok {
		t.Error("CRD: no status subresource; the controller writes status through it")
	}
}

// TestCRDSchemaMatchesTypes: every property of the CRD's schema is a field
// of VmTemplate (recursively) with the same JSON name and type, every field
// is a property, and a property is required exactly when its field is not
// omitempty. The enums are this package's constants and the providers
// carbongate knows.
func TestCRDSchemaMatchesTypes(t *testing.T) {
	t.Parallel()
	s := readCRD(t).Spec.Versions[0].Schema.OpenAPIV3Schema
	compare(t, "", reflect.TypeFor[VmTemplate](), s)
	spec, status := s.Properties["spec"], s.Properties["status"]
	for _, e := range []struct {
		path      string
		got, want []string
	}{
		{"spec.provider", spec.Properties["provider"].Enum, regions.Providers()},
		{"spec.residency", spec.Properties["residency"].Enum, []string{"EU", ""}},
		{"status.phase", status.Properties["phase"].Enum, Phases},
		{"status.conditions[].status", status.Properties["conditions"].Items.Properties["status"].Enum,
			[]string{string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown)}},
	} {
		got, want := slices.Sorted(slices.Values(e.got)), slices.Sorted(slices.Values(e.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s: the CRD's enum %q, want %q", e.path, got, want)
		}
	}
}

// compare checks schema s against Go type typ at path.
func compare(t *testing.T, path string, typ reflect.Type, s props) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	want, format := openAPIType(typ)
	if s.Type != want || (format != "" && s.Format != format) {
		t.Errorf("%s: the CRD says type %s format %q, the Go type %s is %s %q", name(path), s.Type, s.Format, typ, want, format)
		return
	}
	switch {
	case want == "array":
		if s.Items == nil {
			t.Errorf("%s: an array without items", name(path))
			return
		}
		compare(t, path+"[]", typ.Elem(), *s.Items)
	case want == "object" && typ.Kind() == reflect.Struct:
		if typ == reflect.TypeFor[metav1.ObjectMeta]() {
			return // the API server's own schema
		}
		fields := jsonFields(typ)
		var required []string
		for n, f := range fields {
			if _, ok := s.Properties[n]; !ok {
				t.Errorf("%s: the Go field %s is not in the CRD", name(path+"."+n), f.Name)
			}
			if !strings.Contains(f.Tag.Get("json"), ",omitempty") {
				required = append(required, n)
			}
		}
		for n, p := range s.Properties {
			if f, ok := fields[n]; ok {
				compare(t, path+"."+n, f.Type, p)
			} else {
				t.Errorf("%s: in the CRD, not a field of %s", name(path+"."+n), typ)
			}
		}
		sort.Strings(required)
		if got := slices.Sorted(slices.Values(s.Required)); !slices.Equal(got, required) {
			t.Errorf("%s: the CRD requires %q, the Go type %s (fields without omitempty) %q", name(path), got, typ, required)
		}
	}
}

func name(path string) string {
	if path == "" {
		return "(the object)"
	}
	return strings.TrimPrefix(path, ".")
}

// openAPIType is the OpenAPI type (and format) of a Go type as the
// API machinery encodes it.
func openAPIType(typ reflect.Type) (string, string) {
	switch {
	case typ == reflect.TypeFor[metav1.Time]():
		return "string", "date-time"
	case typ.Kind() == reflect.String:
		return "string", ""
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Uint64:
		return "integer", ""
	case typ.Kind() == reflect.Float64 || typ.Kind() == reflect.Float32:
		return "number", ""
	case typ.Kind() == reflect.Bool:
		return "boolean", ""
	case typ.Kind() == reflect.Slice:
		return "array", ""
	case typ.Kind() == reflect.Struct || typ.Kind() == reflect.Map:
		return "object", ""
	}
	return typ.String(), ""
}

// jsonFields returns a struct's fields by JSON name, inline members
// flattened.
func jsonFields(typ reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		n, opts, _ := strings.Cut(tag, ",")
		switch {
		case n == "-" || !f.IsExported():
		case opts == "inline" || (f.Anonymous && n == ""):
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		default:
			out[cmp.Or(n, f.Name)] = f
		}
	}
	return out
}
