package admission

import (
	"encoding/json"
	"strings"
	"testing"
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
