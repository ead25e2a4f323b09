package instances

import (
	"fmt"
	"math"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

// testCatalog is a small catalog with round coefficients: X costs 1 W per
// vCPU at 50 % (0.5 + 0.5 × (1.5 − 0.5)), Y 2 W; PUE 1; memory per chip 16 GB
// for X (so no X type counts memory), 8 GB for Y and unknown processors.
func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	f := &File{Provider: "test", Coefficients: Coefficients{
		MinWatts: map[string]float64{"X": 0.5, "Y": 1, "G": 10}, MaxWatts: map[string]float64{"X": 1.5, "Y": 3, "G": 30},
		MinWattsAvg: 1, MaxWattsAvg: 3, MemoryGBPerChip: map[string]float64{"X": 16, "Y": 8}, MemoryGBPerChipAvg: 8,
		MemoryWattsPerGB: 0.5, PUE: 1, CPUUtilization: 0.5, VCPUsPerChip: 96, ServerLifespanHours: 1000,
	}, Types: []Type{
		{Name: "x.2", Family: "x", VCPUs: 2, MemoryGiB: 4, Processors: []string{"X"}},
		{Name: "x.4", Family: "x", VCPUs: 4, MemoryGiB: 8, Processors: []string{"X"}},
		{Name: "x.8", Family: "x", VCPUs: 8, MemoryGiB: 16, Processors: []string{"X"}}, // largest of x: 16 GiB per chip, no memory counted
		{Name: "y.2", Family: "y", VCPUs: 2, MemoryGiB: 16, EmbodiedTCO2e: 2, Processors: []string{"Y"}},
		{Name: "y.4", Family: "y", VCPUs: 4, MemoryGiB: 32, Processors: []string{"Y"}}, // largest of y: (32 − 8)/(32/m) GB counted
		{Name: "b.2", Family: "b", VCPUs: 2, MemoryGiB: 8, Processors: []string{"X"}, Burstable: true},
		{Name: "g.4", Family: "g", VCPUs: 4, MemoryGiB: 16, Processors: []string{"X"}, GPUs: 1, GPUProcessors: []string{"G"}},
		{Name: "t.4", Family: "t", VCPUs: 4, MemoryGiB: 8, Processors: []string{"X"}}, // ties x.4 in every way but the name
		{Name: "u.1", Family: "u", VCPUs: 1, MemoryGiB: 64, Processors: []string{"Unknown"}},
	}}
	b, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFit(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	tests := []struct {
		name      string
		req       Request
		want      string
		watts     float64
		alts      []string
		code      string
		field     string
		considers int
	}{
		{name: "exact fit", req: Request{MinCPU: 2, MinRAMGiB: 4}, want: "x.2", watts: 2, alts: []string{"t.4", "x.4", "x.8", "y.2", "y.4"}, considers: 6},
		{name: "ties: same watts, cpus and memory, by name", req: Request{MinCPU: 3, MinRAMGiB: 5}, want: "t.4", watts: 4, alts: []string{"x.4", "x.8", "y.4"}, considers: 4},
		{name: "memory counted beyond the chip's share", req: Request{MinCPU: 2, MinRAMGiB: 16, Family: "y"}, want: "y.2", watts: 4 + 0.5*(32-8)/(32/16), alts: []string{"y.4"}, considers: 2},
		{name: "family is case-insensitive", req: Request{MinCPU: 1, MinRAMGiB: 1, Family: "X"}, want: "x.2", watts: 2, alts: []string{"x.4", "x.8"}, considers: 3},
		{name: "processor preference", req: Request{MinCPU: 1, MinRAMGiB: 1, Processor: "y"}, want: "y.2", watts: 10, alts: []string{"y.4"}, considers: 2},
		{name: "burstable only when asked", req: Request{MinCPU: 2, MinRAMGiB: 8, Burstable: true, Alternatives: 1}, want: "b.2", watts: 2, alts: []string{"t.4"}, considers: 6},
		{name: "GPU only when asked", req: Request{MinCPU: 1, MinRAMGiB: 1, GPU: true}, want: "g.4", watts: 4 + 20, considers: 1},
		{name: "unknown processors only when asked", req: Request{MinCPU: 1, MinRAMGiB: 64, UnknownProcessor: true}, want: "u.1", watts: 2 + 0.5*56, considers: 1},
		{name: "utilization 100 %; ties on watts: fewer vCPUs first (y.2 and x.8 at 12 W)", req: Request{MinCPU: 2, MinRAMGiB: 4, Utilization: 1}, want: "x.2", watts: 3, alts: []string{"t.4", "x.4", "y.2", "x.8", "y.4"}, considers: 6},
		{name: "no fit: vCPUs", req: Request{MinCPU: 9, MinRAMGiB: 1}, code: forecast.EINFEASIBLE, field: "min_cpu"},
		{name: "no fit: memory (unknown types excluded)", req: Request{MinCPU: 1, MinRAMGiB: 64}, code: forecast.EINFEASIBLE, field: "min_ram"},
		{name: "no fit: both bounds, not together", req: Request{MinCPU: 8, MinRAMGiB: 32}, code: forecast.EINFEASIBLE, field: "min_cpu"},
		{name: "no fit: family", req: Request{MinCPU: 1, MinRAMGiB: 1, Family: "b"}, code: forecast.EINFEASIBLE, field: "family"},
		{name: "no fit: processor", req: Request{MinCPU: 1, MinRAMGiB: 1, Processor: "Z"}, code: forecast.EINFEASIBLE, field: "processor"},
		{name: "invalid cpu", req: Request{MinCPU: 0, MinRAMGiB: 1}, code: forecast.EINVALID, field: "min_cpu"},
		{name: "invalid ram", req: Request{MinCPU: 1, MinRAMGiB: math.NaN()}, code: forecast.EINVALID, field: "min_ram"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := c.Fit(tt.req)
			if tt.code != "" {
				if got, want := forecast.ErrorCode(err), tt.code; got != want {
					t.Fatalf("code=%q (%v), want %q", got, err, want)
				}
				if got, want := forecast.ErrorField(err), tt.field; got != want {
					t.Fatalf("field=%q (%v), want %q", got, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := r.Choice.Type.Name, tt.want; got != want {
				t.Fatalf("choice=%s, want %s", got, want)
			}
			if got, want := r.Choice.Watts.Total, tt.watts; math.Abs(got-want) > 1e-9 {
				t.Fatalf("watts=%v, want %v", got, want)
			}
			var alts []string
			for _, a := range r.Alternatives {
				alts = append(alts, a.Type.Name)
			}
			if got, want := fmt.Sprint(alts), fmt.Sprint(tt.alts); got != want {
				t.Fatalf("alternatives=%s, want %s", got, want)
			}
			if got, want := r.Considered, tt.considers; got != want {
				t.Fatalf("considered=%d, want %d", got, want)
			}
		})
	}
}

// TestFitSeed is the issue's example: (2 vCPU, 16 GiB) on Azure. CCF
// estimates the Ice Lake E-series v5 types (provider-average coefficients)
// below E2as v4 (AMD EPYC 2nd Gen, whose per-chip memory baseline leaves
// more memory counted), so E2d v5 wins by name among three equal v5 types
// and E2as v4 is among the alternatives.
func TestFitSeed(t *testing.T) {
	t.Parallel()
	c, err := Load("azure")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Fit(Request{MinCPU: 2, MinRAMGiB: 16})
	if err != nil {
		t.Fatal(err)
	}
	ch := r.Choice.Type
	if ch.Name != "E2d v5" || ch.VCPUs != 2 || ch.MemoryGiB != 16 {
		t.Fatalf("choice=%+v, want E2d v5 (2 vCPUs, 16 GiB)", ch)
	}
	if got, want := r.Choice.Watts.Total, 7.8979618; math.Abs(got-want) > 1e-6 {
		t.Fatalf("watts=%v, want %v", got, want)
	}
	found := false
	for _, a := range r.Alternatives {
		if a.Type.Name == "E2as v4" {
			found = true
			if got, want := a.Watts.Total, 8.5565532; math.Abs(got-want) > 1e-6 {
				t.Fatalf("E2as v4 watts=%v, want %v", got, want)
			}
		}
	}
	if !found {
		t.Fatalf("E2as v4 not among the alternatives %+v", r.Alternatives)
	}
	if _, err := Load("gcp"); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("Load(gcp) err=%v, want ENOTFOUND", err)
	}
}

func ExampleCatalog_Fit() {
	c, err := Load("aws")
	if err != nil {
		panic(err)
	}
	r, err := c.Fit(Request{MinCPU: 2, MinRAMGiB: 16})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d vCPUs, %g GiB, %.2f W of %d types that fit\n", r.Choice.Type.Name, r.Choice.Type.VCPUs, r.Choice.Type.MemoryGiB, r.Choice.Watts.Total, r.Considered)
	// Output: z1d.large: 2 vCPUs, 16 GiB, 6.97 W of 311 types that fit
}
