package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/gateway/guard"
	"github.com/carbongate/carbongate/gateway/wiring"
)

// TestZoneCapOverHTTP: with a 50% zone cap, 100 identical requests are
// split between the best zone and the next best; diverted answers carry
// "capped", which the OpenAPI document describes, and the metric counts
// them.
func TestZoneCapOverHTTP(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	g, err := wiring.NewBundled(context.Background(), wiring.Config{Clock: fixedClock{testNow}, Registerer: reg,
		Options: wiring.Options{ZoneCap: guard.Config{Share: 0.5, MinCount: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiSrv, err := New(Config{Service: g.Service, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(apiSrv)
	t.Cleanup(ts.Close)
	s := loadSpec(t)

	type answer struct {
		Decision     struct{ Zone string }   `json:"decision"`
		Alternatives []struct{ Zone string } `json:"alternatives"`
		Capped       []struct {
			Zone  string
			Share float64
		} `json:"capped"`
	}
	zones := map[string]int{}
	var best, second string
	for i := range 100 {
		resp, body := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(acceptance))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
		var a answer
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		best, second = a.Alternatives[0].Zone, a.Alternatives[1].Zone
		zones[a.Decision.Zone]++
		if a.Decision.Zone == best {
			if a.Capped != nil {
				t.Fatalf("request %d: best zone with capped %+v", i, a.Capped)
			}
			continue
		}
		if a.Decision.Zone != second || len(a.Capped) != 1 || a.Capped[0].Zone != best || a.Capped[0].Share <= 0.5 {
			t.Fatalf("request %d: decision %s capped %+v (best %s, second %s)", i, a.Decision.Zone, a.Capped, best, second)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		if err := validate(s, map[string]any{"$ref": "#/components/schemas/ScheduleResponse"}, v, "$"); err != nil {
			t.Fatalf("%v\n%s", err, body)
		}
	}
	if zones[best] > 51 || zones[best]+zones[second] != 100 {
		t.Fatalf("decisions %v: want at most ~50 to %s, the rest to %s", zones, best, second)
	}
	_, metrics := do(t, "GET", ts.URL+"/metrics", "", nil)
	if want := `carbongate_decision_zone_capped_total{zone="` + best + `"}`; !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %s", want)
	}
}
