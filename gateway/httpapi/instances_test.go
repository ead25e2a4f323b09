package httpapi

import (
	"encoding/json"
	"github.com/carbongate/carbongate/gateway/api"
	"strings"
	"testing"
)

// TestInstanceTypes: the route answers the seed's example with a 2-vCPU,
// 16-GiB E-series type and names the field of every bad parameter.
func TestInstanceTypes(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	resp, body := do(t, "GET", ts.URL+"/v1/instance-types?provider=Azure&min_cpu=2&min_ram=16384Mi&alternatives=3", "", nil)
	var got instanceTypesBody
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s (%v)", resp.StatusCode, body, err)
	}
	if c := got.Choice; c.VCPUs != 2 || c.MemoryGiB != 16 || !strings.HasPrefix(c.Name, "E2") || !(c.Watts > 0) || len(got.Alternatives) != 3 ||
		got.Provider != "azure" || got.Considered < 2 || got.Source.Version == "" {
		t.Fatalf("answer %s, want a 2-vCPU 16-GiB E-series type and 3 runners-up", body)
	}
	for _, tt := range []struct{ query, field string }{
		{"min_cpu=2&min_ram=16", "provider"},
		{"provider=gcp&min_cpu=2&min_ram=16", "provider"},
		{"provider=aws&min_ram=16", "min_cpu"},
		{"provider=aws&min_cpu=-1&min_ram=16", "min_cpu"},
		{"provider=aws&min_cpu=2&min_ram=lots", "min_ram"},
		{"provider=aws&min_cpu=2&min_ram=0Gi", "min_ram"},
		{"provider=aws&min_cpu=2&min_ram=16&gpu=maybe", "gpu"},
		{"provider=aws&min_cpu=2&min_ram=16&utilization=2", "utilization"},
		{"provider=aws&min_cpu=2&min_ram=16&alternatives=500", "alternatives"},
		{"provider=aws&min_cpu=2&min_ram=16&%zz", "query"},
	} {
		resp, body := do(t, "GET", ts.URL+"/v1/instance-types?"+tt.query, "", nil)
		var e api.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 400 || e.Error.Field != tt.field {
			t.Errorf("?%s: %d %s, want 400 naming %s", tt.query, resp.StatusCode, body, tt.field)
		}
	}
	resp, body = do(t, "GET", ts.URL+"/v1/instance-types?provider=aws&min_cpu=2&min_ram=100000", "", nil)
	var e api.ErrorBody
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 422 || e.Error.Field != "min_ram" {
		t.Errorf("unfittable memory: %d %s, want 422 naming min_ram", resp.StatusCode, body)
	}
}
