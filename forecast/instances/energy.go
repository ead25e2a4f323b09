package instances

import (
	"strings"
	"time"
)

// Lookup returns the type of the catalog named name, compared without
// regard to case or repeated white space ("E2as v4", "e2as  V4"), and
// false when there is none.
func (c *Catalog) Lookup(name string) (Type, bool) {
	name = strings.Join(strings.Fields(name), " ")
	for _, t := range c.file.Types {
		if strings.EqualFold(t.Name, name) {
			return t, true
		}
	}
	return Type{}, false
}

// EstimateSize returns the estimated power of a workload of vcpus vCPUs
// and memGiB of memory at utilisation u (0..1) when its instance type is
// unknown: CCF's method with the provider's average coefficients,
//
//	watts = PUE × (vCPUs × (min_avg + u × (max_avg − min_avg)) + GiB × memory watts per GB)
//
// counting all of the memory (CCF leaves out the part its processor
// coefficients already include, which needs the host's size: an upper
// bound, then, by at most memGiB × memory watts per GB × PUE).
func (c *Catalog) EstimateSize(vcpus, memGiB, u float64) Watts {
	co := c.file.Coefficients
	w := Watts{Compute: vcpus * (co.MinWattsAvg + u*(co.MaxWattsAvg-co.MinWattsAvg)), MemoryGB: memGiB}
	w.Memory = memGiB * co.MemoryWattsPerGB
	w.Total = co.PUE * (w.Compute + w.Memory)
	return w
}

// Embodied returns CCF's embodied emissions, in grams CO2e, of running t
// for d: the host's embodied emissions spread over the server's expected
// lifespan and shared by vCPUs with the family's largest type,
//
//	grams = embodied tCO2e × 10⁶ × (hours / lifespan hours) × (vCPUs / largest type's vCPUs)
//
// and false when CCF has no embodied figure for t.
func (c *Catalog) Embodied(t Type, d time.Duration) (float64, bool) {
	big := c.largest[t.Family]
	if t.EmbodiedTCO2e <= 0 || big.VCPUs <= 0 {
		return 0, false
	}
	co := c.file.Coefficients
	return t.EmbodiedTCO2e * 1e6 * (d.Hours() / co.ServerLifespanHours) * (float64(t.VCPUs) / float64(big.VCPUs)), true
}
