package httpapi

import (
	"encoding/json"
	"github.com/carbongate/carbongate/gateway/api"
	"math"
	"strings"
	"testing"
)

// TestScheduleGramsOverHTTP: with a power figure every placement carries
// the job's energy and grams (energy × mean intensity), savings_g is the
// baseline's grams minus the decision's, and the minimal answer keeps the
// decision's grams and savings_g; without one no grams appear.
func TestScheduleGramsOverHTTP(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Fatalf("%s=%.12g, want %.12g", what, got, want)
		}
	}
	// 150 W for 3 h: 0.45 kWh.
	body := `{"zones":["DE","SE","PL","ES"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z","power_watts":150}`
	for _, minimal := range []bool{false, true} {
		var hdr []string
		if minimal {
			hdr = []string{"Prefer", "return=minimal"}
		}
		resp, raw := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(body), hdr...)
		var a scheduleBody
		if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %s (%v)", resp.StatusCode, raw, err)
		}
		all := []api.Placement{a.Decision}
		if !minimal {
			if a.Baseline == nil || a.Power == nil || a.Power.Watts != 150 || a.Power.Source != "power_watts" || a.Power.Utilization != nil || len(a.Alternatives) != 4 {
				t.Fatalf("answer %s: want a baseline, power 150 W from power_watts and 4 alternatives", raw)
			}
			all = append(all, *a.Baseline)
			all = append(all, a.Alternatives...)
		}
		for _, p := range all {
			if p.EnergyKWh == nil || p.EmissionsG == nil {
				t.Fatalf("%s: no energy or grams in %s", p.Zone, raw)
			}
			near(p.Zone+" kWh", *p.EnergyKWh, 0.45)
			near(p.Zone+" grams", *p.EmissionsG, 0.45*p.MeanIntensity)
		}
		if a.SavingsG == nil || a.SavingsPct == nil || !(*a.SavingsG > 0) {
			t.Fatalf("savings_g missing or not positive: %s", raw)
		}
		if !minimal {
			near("savings_g", *a.SavingsG, *a.Baseline.EmissionsG-*a.Decision.EmissionsG)
			near("savings_pct from grams", *a.SavingsPct, *a.SavingsG / *a.Baseline.EmissionsG * 100)
		}
		if a.EmbodiedG != nil {
			t.Fatalf("embodied_g without include_embodied: %s", raw)
		}
	}
	// An instance type, embodied asked: the power names its source.
	resp, raw := do(t, "POST", ts.URL+"/v1/schedule", "application/json",
		[]byte(`{"zones":["DE","SE"],"duration":"PT3H","instance_type":"E2AS V4","utilization":0.25,"include_embodied":true}`))
	var a scheduleBody
	if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s (%v)", resp.StatusCode, raw, err)
	}
	if p := a.Power; p == nil || p.Provider != "azure" || p.InstanceType != "E2as v4" || p.Utilization == nil || *p.Utilization != 0.25 || a.EmbodiedG == nil || !(*a.EmbodiedG > 0) {
		t.Fatalf("answer %s: want azure E2as v4 at 0.25 with embodied_g", raw)
	}
	// Without a power figure, no grams.
	_, raw = do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(acceptance))
	for _, m := range []string{"energy_kwh", "emissions_g", "savings_g", "embodied_g", `"power"`} {
		if strings.Contains(string(raw), m) {
			t.Fatalf("%s in an answer without a power figure: %s", m, raw)
		}
	}
}
