package admission

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

func mustObject(t *testing.T, raw string) object {
	t.Helper()
	o, err := parseObject([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestKeepTemplateDecision covers what the fixtures do not: a time added
// to a template scheduled without one, and annotations put back on an
// object that has none.
func TestKeepTemplateDecision(t *testing.T) {
	t.Parallel()
	old := mustObject(t, `{"metadata":{"annotations":{"carbongate.io/provenance":"P"}},"spec":{"schedulingRegion":"swedencentral"}}`)
	o := keepTemplateDecision(old, mustObject(t, `{"metadata":{},"spec":{"schedulingRegion":"swedencentral","schedulingTime":"2021-06-01T00:00:00Z"}}`))
	if o.allowed || o.code != 400 || !strings.HasPrefix(o.message, "spec.schedulingTime: is carbongate's decision and cannot be changed (it is absent)") {
		t.Errorf("time added: %+v, want 400 naming spec.schedulingTime", o)
	}
	o = keepTemplateDecision(old, mustObject(t, `{"metadata":{"name":"x"},"spec":{"schedulingRegion":"swedencentral"}}`))
	b, _ := json.Marshal(o.patch)
	if want := `[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"add","path":"/metadata/annotations/carbongate.io~1provenance","value":"P"}]`; !o.allowed || string(b) != want {
		t.Errorf("annotations dropped: allowed=%v patch %s, want %s", o.allowed, b, want)
	}
}

// TestValidateReadsTheTypedSpec: the webhook reads a VmTemplate by the
// JSON names of v1alpha1.VmTemplateSpec (whose test checks them against
// the CRD). A template built from the type validates to its values, and
// each field the webhook validates, given a JSON type the CRD does not
// allow, is denied by that name.
func TestValidateReadsTheTypedSpec(t *testing.T) {
	t.Parallel()
	ptr := func(s string) *string { return &s }
	cpu := int64(4)
	vm := v1alpha1.VmTemplate{Spec: v1alpha1.VmTemplateSpec{MinCPU: &cpu, MinRAM: ptr("16Gi"), Duration: "PT3H",
		Deadline: ptr("2021-06-03T00:00:00Z"), MaxLatencyMs: 40, OriginRegion: "westeurope", Provider: ptr("aws"),
		Residency: ptr("EU"), InstanceType: ptr("m5.xlarge")}}
	raw, err := json.Marshal(vm)
	if err != nil {
		t.Fatal(err)
	}
	s, bad := mustObject(t, string(raw)).validate()
	want := spec{Duration: "PT3H", Deadline: "2021-06-03T00:00:00Z", MaxLatencyMs: 40, OriginRegion: "westeurope",
		Provider: "aws", ProviderGiven: true, ResidencyEU: true, MinCPU: 4, MinRAMGiB: 16, InstanceTypeGiven: true}
	if len(bad) > 0 || s != want {
		t.Fatalf("validate = %+v %q, want %+v", s, bad, want)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &struct {
		Spec *map[string]json.RawMessage `json:"spec"`
	}{&fields}); err != nil {
		t.Fatal(err)
	}
	decision := []string{"schedulingRegion", "schedulingTime", "instanceType"} // outputs, not validated
	for name := range fields {
		if slices.Contains(decision, name) {
			continue
		}
		obj := mustObject(t, string(raw))
		obj.spec[name] = json.RawMessage(`{"not":"this"}`)
		if _, bad := obj.validate(); !slices.ContainsFunc(bad, func(p string) bool { return strings.HasPrefix(p, "spec."+name+": ") }) {
			t.Errorf("spec.%s as an object: problems %q, want one naming it", name, bad)
		}
	}
}
