package gateway_test

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/gateway"
)

func ptr[T any](v T) *T { return &v }

// flat returns n hours of value v.
func flat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestScheduleEnergyWorkedExamples checks the energy and grams of a 3-hour
// job against figures worked out by hand from CCF's published
// coefficients (forecast/instances/data): DE at a flat 400 gCO2eq/kWh is
// the baseline (the first candidate), SE at 100 the decision.
func TestScheduleEnergyWorkedExamples(t *testing.T) {
	t.Parallel()
	svc := newService(t, table{"DE": flat(400, 96), "SE": flat(100, 96)})
	tests := []struct {
		name     string
		text     gateway.RequestText
		watts    float64
		embodied float64 // grams over the 3 hours; 0: not asked
	}{
		{
			// 150 W × 3 h = 450 Wh = 0.45 kWh; DE 0.45 × 400 = 180 g,
			// SE 0.45 × 100 = 45 g, savings 135 g.
			name: "power_watts", text: gateway.RequestText{PowerWatts: ptr(150.0)}, watts: 150,
		},
		{
			// AWS m5.large: 2 vCPUs Skylake (min 0.65, max 4.26 W per vCPU),
			// 8 GiB; utilisation 0.5 (CCF's AVG_CPU_UTILIZATION_2020 = 50).
			// compute = 2 × (0.65 + 0.5 × (4.26 − 0.65)) = 2 × 2.455 = 4.91 W.
			// memory: the m5 family's largest type is m5.metal (96 vCPUs,
			// 384 GiB): chips = ⌈96 / 96⌉ = 1, Skylake includes 81.32 GB per
			// chip, so CCF counts (384 − 81.32) / (384 / 8) = 6.305833 GB ×
			// 0.392 W/GB = 2.471887 W.
			// watts = PUE 1.135 × (4.91 + 2.471887) = 8.378441 W; 3 h:
			// 0.025135324 kWh; DE 10.054130 g, SE 2.513532 g, savings 7.540597 g.
			// embodied: 1.6103792 t × 10⁶ × (3 / 35040 h) × (2 / 96 vCPUs) = 2.872394 g.
			name:  "aws m5.large with embodied",
			text:  gateway.RequestText{InstanceType: ptr("m5.large"), IncludeEmbodied: ptr(true)},
			watts: 8.378441366666667, embodied: 2.872394406392694,
		},
		{
			// Azure E2as v4 (provider from the catalog that has the name):
			// 2 vCPUs AMD EPYC 2nd Gen (min 0.47, max 1.69), 16 GiB.
			// compute = 2 × (0.47 + 0.5 × 1.22) = 2.16 W.
			// memory: largest E96as v4 (96 vCPUs, 672 GiB), 1 chip, EPYC 2nd
			// Gen includes 129.78 GB: (672 − 129.78) / (672 / 16) = 12.91 GB
			// × 0.392 = 5.06072 W.
			// watts = PUE 1.185 × (2.16 + 5.06072) = 8.5565532 W.
			name: "azure E2as v4", text: gateway.RequestText{InstanceType: ptr("e2as v4")}, watts: 8.5565532,
		},
		{
			// m5.large at utilisation 1: compute = 2 × 4.26 = 8.52 W;
			// watts = 1.135 × (8.52 + 2.471887) = 12.475791 W.
			name: "aws m5.large at full load", text: gateway.RequestText{Provider: ptr("Amazon"), InstanceType: ptr("m5.large"), Utilization: ptr(1.0)},
			watts: 12.475791366666667,
		},
		{
			// 4 vCPUs and 16 GiB on AWS, no instance type: the provider's
			// average coefficients (MIN_WATTS_AVG 0.74, MAX_WATTS_AVG 3.5),
			// all memory counted.
			// compute = 4 × (0.74 + 0.5 × 2.76) = 8.48 W; memory = 16 × 0.392
			// = 6.272 W; watts = 1.135 × 14.752 = 16.74352 W.
			name: "vcpus on aws", text: gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(4.0), MemoryGiB: ptr(16.0)}, watts: 16.74352,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.text.Zones, tt.text.Duration = []string{"DE", "SE"}, ptr("PT3H")
			req, err := gateway.ParseRequest(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			d, err := svc.Schedule(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			e := d.Energy
			if e == nil {
				t.Fatal("no energy in the decision")
			}
			kwh := tt.watts * 3 / 1000
			near(t, "watts", e.Power.Watts, tt.watts)
			near(t, "kWh", e.KWh, kwh)
			if got, want := d.Decision.Zone, forecast.Zone("SE"); got != want {
				t.Fatalf("decision=%s, want %s", got, want)
			}
			near(t, "decision grams", d.Decision.EmissionsG, kwh*100)
			near(t, "baseline grams", d.Baseline.EmissionsG, kwh*400)
			near(t, "savings grams", *e.SavingsG, kwh*300)
			for _, a := range d.Alternatives {
				near(t, "alternative "+string(a.Zone)+" grams", a.EmissionsG, kwh*a.Mean)
			}
			if tt.embodied == 0 {
				if e.EmbodiedG != nil {
					t.Fatalf("embodied=%v, not asked", *e.EmbodiedG)
				}
				return
			}
			if e.EmbodiedG == nil {
				t.Fatal("no embodied grams")
			}
			near(t, "embodied grams", *e.EmbodiedG, tt.embodied)
		})
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Fatalf("%s=%.12g, want %.12g", what, got, want)
	}
}

// TestScheduleWithoutPower: no power figure, no grams.
func TestScheduleWithoutPower(t *testing.T) {
	t.Parallel()
	svc := newService(t, table{"DE": flat(400, 96), "SE": flat(100, 96)})
	req, err := gateway.ParseRequest(gateway.RequestText{Zones: []string{"DE", "SE"}, Duration: ptr("PT3H")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := svc.Schedule(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if d.Energy != nil || d.Decision.EmissionsG != 0 || d.Baseline.EmissionsG != 0 {
		t.Fatalf("energy=%+v, decision grams %v, baseline grams %v; want none", d.Energy, d.Decision.EmissionsG, d.Baseline.EmissionsG)
	}
}

// TestParseRequestPowerErrors: every bad power field is an EINVALID
// naming it.
func TestParseRequestPowerErrors(t *testing.T) {
	t.Parallel()
	aws := []gateway.Location{{Provider: "aws", Region: "eu-central-1"}}
	mixed := []gateway.Location{{Provider: "aws", Region: "eu-central-1"}, {Provider: "gcp", Region: "europe-west3"}}
	tests := []struct {
		name  string
		text  gateway.RequestText
		field string
	}{
		{"negative power", gateway.RequestText{PowerWatts: ptr(-5.0)}, "power_watts"},
		{"zero power", gateway.RequestText{PowerWatts: ptr(0.0)}, "power_watts"},
		{"absurd power", gateway.RequestText{PowerWatts: ptr(2e6)}, "power_watts"},
		{"NaN power", gateway.RequestText{PowerWatts: ptr(math.NaN())}, "power_watts"},
		{"infinite power", gateway.RequestText{PowerWatts: ptr(math.Inf(1))}, "power_watts"},
		{"power and instance type", gateway.RequestText{PowerWatts: ptr(100.0), InstanceType: ptr("m5.large")}, "instance_type"},
		{"power and vcpus", gateway.RequestText{PowerWatts: ptr(100.0), VCPUs: ptr(2.0)}, "vcpus"},
		{"instance type and memory", gateway.RequestText{InstanceType: ptr("m5.large"), MemoryGiB: ptr(8.0)}, "memory_gib"},
		{"power with utilization", gateway.RequestText{PowerWatts: ptr(100.0), Utilization: ptr(0.5)}, "utilization"},
		{"power with provider", gateway.RequestText{PowerWatts: ptr(100.0), Provider: ptr("aws")}, "provider"},
		{"utilization alone", gateway.RequestText{Utilization: ptr(0.5)}, "utilization"},
		{"provider alone", gateway.RequestText{Provider: ptr("aws")}, "provider"},
		{"unknown instance type", gateway.RequestText{InstanceType: ptr("m99.huge")}, "instance_type"},
		{"instance type of another provider", gateway.RequestText{Provider: ptr("azure"), InstanceType: ptr("m5.large")}, "instance_type"},
		{"empty instance type", gateway.RequestText{InstanceType: ptr("")}, "instance_type"},
		{"provider without data", gateway.RequestText{Provider: ptr("gcp"), InstanceType: ptr("m5.large")}, "provider"},
		{"unknown provider", gateway.RequestText{Provider: ptr("acme"), VCPUs: ptr(2.0)}, "provider"},
		{"utilization above 1", gateway.RequestText{InstanceType: ptr("m5.large"), Utilization: ptr(50.0)}, "utilization"},
		{"negative utilization", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(2.0), Utilization: ptr(-0.1)}, "utilization"},
		{"NaN utilization", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(2.0), Utilization: ptr(math.NaN())}, "utilization"},
		{"zero vcpus", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(0.0)}, "vcpus"},
		{"absurd vcpus", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(1e9)}, "vcpus"},
		{"fractional vcpus", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(4.5)}, "vcpus"},
		{"tiny power", gateway.RequestText{PowerWatts: ptr(5e-324)}, "power_watts"},
		{"power under 10 mW", gateway.RequestText{PowerWatts: ptr(0.009)}, "power_watts"},
		{"zero utilization", gateway.RequestText{InstanceType: ptr("m5.large"), Utilization: ptr(0.0)}, "utilization"},
		{"memory without vcpus", gateway.RequestText{Provider: ptr("aws"), MemoryGiB: ptr(8.0)}, "vcpus"},
		{"negative memory", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(2.0), MemoryGiB: ptr(-1.0)}, "memory_gib"},
		{"absurd memory", gateway.RequestText{Provider: ptr("aws"), VCPUs: ptr(2.0), MemoryGiB: ptr(1e9)}, "memory_gib"},
		{"vcpus without provider", gateway.RequestText{VCPUs: ptr(2.0)}, "provider"},
		{"vcpus with mixed locations", gateway.RequestText{Locations: mixed, VCPUs: ptr(2.0)}, "provider"},
		{"embodied without instance type", gateway.RequestText{PowerWatts: ptr(100.0), IncludeEmbodied: ptr(true)}, "include_embodied"},
		{"embodied alone", gateway.RequestText{IncludeEmbodied: ptr(true)}, "include_embodied"},
		{"embodied unknown for the type", gateway.RequestText{InstanceType: ptr("A1"), IncludeEmbodied: ptr(true)}, "include_embodied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.text.Duration = ptr("PT3H")
			if tt.text.Locations == nil {
				tt.text.Zones = []string{"DE"}
			}
			_, err := gateway.ParseRequest(tt.text)
			if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
				t.Fatalf("code=%q (%v), want %s", got, err, want)
			}
			if got := forecast.ErrorField(err); got != tt.field {
				t.Fatalf("field=%q (%v), want %q", got, err, tt.field)
			}
		})
	}
	// The provider comes from the locations when they all name one.
	req, err := gateway.ParseRequest(gateway.RequestText{Locations: aws, Duration: ptr("PT3H"), VCPUs: ptr(2.0)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.Power.Provider, "aws"; got != want {
		t.Fatalf("provider=%q, want %q", got, want)
	}
}

// TestInstanceNamesDifferAcrossProviders: instance_type without provider
// takes the one catalog that has the name, which needs names no two
// providers share (compared as Lookup compares them).
func TestInstanceNamesDifferAcrossProviders(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, p := range instances.Providers {
		cat, err := instances.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range cat.Types() {
			k := strings.ToLower(strings.Join(strings.Fields(typ.Name), " "))
			if q, ok := seen[k]; ok && q != p {
				t.Fatalf("%s is a type of %s and %s", typ.Name, q, p)
			}
			seen[k] = p
		}
	}
	if len(seen) < 100 || !slices.Contains(instances.Providers, "azure") {
		t.Fatalf("%d names: the catalogs did not load", len(seen))
	}
}
