package admission

import (
	"cmp"
	"slices"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

// DefaultProvider is the provider of a VmTemplate without spec.provider.
const DefaultProvider = v1alpha1.DefaultProvider

// Region is a cloud region as the decision sees it.
type Region struct {
	Name string        // the provider's region name, e.g. westeurope
	Zone forecast.Zone // Electricity Maps zone; "" when the region has none (or several)
	EU   bool          // located in an EU-27 member state
}

// Data is what the decision knows about cloud regions. Production code
// reads the OPA bundle's data files (see Bundle), so that the webhook and
// the Rego policy decide from the same numbers.
type Data interface {
	// Regions returns every region of provider (a canonical name: aws,
	// gcp, azure or oracle), in any order; none for a provider without
	// regions.
	Regions(provider string) []Region
	// HasLatency reports whether provider has latency data at all.
	HasLatency(provider string) bool
	// RTT returns the P95 round-trip time in milliseconds from region
	// from to region to of provider, and false when it is not measured.
	// It is directional: RTT(p, a, b) need not equal RTT(p, b, a).
	RTT(provider, from, to string) (float64, bool)
}

// sortRegions sorts rs by name.
func sortRegions(rs []Region) {
	slices.SortFunc(rs, func(a, b Region) int { return cmp.Compare(a.Name, b.Name) })
}
