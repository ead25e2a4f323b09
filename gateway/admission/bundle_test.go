package admission

import (
	"testing"

	"github.com/carbongate/carbongate/deploy/opa"
)

// TestBundle: Data reads the OPA bundle's files as they are.
func TestBundle(t *testing.T) {
	t.Parallel()
	d := mustBundle(t)
	find := func(provider, name string) Region {
		t.Helper()
		for _, r := range d.Regions(provider) {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no %s region %s", provider, name)
		return Region{}
	}
	if r := find("azure", "westeurope"); r.Zone != "NL" || !r.EU {
		t.Errorf("westeurope %+v, want NL in the EU", r)
	}
	if r := find("azure", "northeurope"); r.Zone != "IE" || !r.EU {
		t.Errorf("northeurope %+v, want IE (Dublin), in the EU", r)
	}
	if r := find("aws", "cn-north-1"); r.Zone != "CN" || r.EU {
		t.Errorf("cn-north-1 %+v, want CN (mainland China), outside the EU", r)
	}
	if r := find("azure", "brazilus"); r.Zone != "" || r.EU {
		t.Errorf("brazilus %+v, want no zone (an exception), outside the EU", r)
	}
	if r := find("aws", "eu-west-2"); r.Zone != "GB" || r.EU {
		t.Errorf("eu-west-2 %+v, want GB outside the EU", r)
	}
	if len(d.Regions("oracle")) == 0 || d.HasLatency("aws") || !d.HasLatency("azure") {
		t.Error("oracle has no regions, or latency data is not azure's alone")
	}
	l, _, err := opa.LoadLatency("azure")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"westeurope", "northeurope"}, {"northeurope", "westeurope"}} {
		got, ok := d.RTT("azure", p[0], p[1])
		if want := l.RTT[p[0]][p[1]]; !ok || got != want {
			t.Errorf("RTT %s→%s = %v %v, want %v", p[0], p[1], got, ok, want)
		}
	}
	if _, ok := d.RTT("azure", "westeurope", "nowhere"); ok {
		t.Error("RTT of an unknown region")
	}
}
