package main

import (
	"strconv"
	"testing"

	"github.com/carbongate/carbongate/deploy/opa"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/instances"
)

// TestInstanceIndexMatchesFit: the first type of the committed index that
// fits (what the policy takes) is Catalog.Fit's choice, for a grid of
// requests from the smallest to past the largest type; a request the
// index has no type for is one Fit cannot fit. The same for the by_vcpus
// shortcut, where it has the request's vCPU count.
func TestInstanceIndexMatchesFit(t *testing.T) {
	t.Parallel()
	rams := []float64{0.5, 1, 2, 3.5, 4, 7, 8, 15.5, 16, 17, 31, 32, 48, 64, 100, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096, 12000, 30000, 100000}
	for _, p := range instances.Providers {
		cat, err := instances.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := opa.LoadInstances(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.Types) < 10 || len(idx.Types) >= len(cat.Types()) {
			t.Fatalf("%s: %d types of %d; the index should keep some and drop many", p, len(idx.Types), len(cat.Types()))
		}
		fits, none, byCPU := 0, 0, 0
		for cpu := 1; cpu <= 1000; cpu += 1 + cpu/8 {
			for _, ram := range rams {
				want := ""
				switch res, err := cat.Fit(instances.Request{MinCPU: cpu, MinRAMGiB: ram}); {
				case err == nil:
					want = res.Choice.Type.Name
					fits++
				case forecast.ErrorCode(err) == forecast.EINFEASIBLE:
					none++
				default:
					t.Fatal(err)
				}
				got := ""
				for _, typ := range idx.Types {
					if typ.VCPUs >= cpu && typ.MemoryGiB >= ram {
						got = typ.Name
						break
					}
				}
				if got != want {
					t.Fatalf("%s (%d vCPUs, %g GiB): index gives %q, Fit %q", p, cpu, ram, got, want)
				}
				stairs, ok := idx.ByVCPUs[strconv.Itoa(cpu)]
				if !ok {
					continue
				}
				byCPU++
				got = ""
				for _, typ := range stairs {
					if typ.MemoryGiB >= ram {
						got = typ.Name
						break
					}
				}
				if got != want {
					t.Fatalf("%s (%d vCPUs, %g GiB): by_vcpus gives %q, Fit %q", p, cpu, ram, got, want)
				}
			}
		}
		if fits < 100 || none < 10 || byCPU < 100 {
			t.Fatalf("%s: %d requests fit, %d did not, %d had a by_vcpus entry: the grid misses a side", p, fits, none, byCPU)
		}
	}
}
