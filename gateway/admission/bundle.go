package admission

import (
	"fmt"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
)

// bundleData is Data read from the OPA bundle's data files.
type bundleData struct {
	regions map[string][]Region                      // provider → regions, sorted by name
	rtt     map[string]map[string]map[string]float64 // provider → from → to → ms
}

// BundleSource is what Bundle reads of the OPA bundle's data files, in
// plain types; opa.Admission implements it. The caller passes it, so
// that the webhook does not import the deployment tree.
type BundleSource interface {
	// RegionZones returns the regions of provider (regions/<provider>):
	// name → Electricity Maps zone, "" for a region without one.
	RegionZones(provider string) (map[string]string, error)
	// EURegions returns the regions of provider located in an EU-27
	// member state (residency/eu).
	EURegions(provider string) (map[string]bool, error)
	// RTT returns the round-trip times of provider in ms, from → to
	// (latency/<provider>), nil when it has none.
	RTT(provider string) (map[string]map[string]float64, error)
}

// Bundle returns the Data of the OPA bundle: regions and zones from
// regions/<provider>, EU membership from residency/eu, round-trip times
// from latency/<provider>, for each of regions.Providers. The Rego policy
// reads the same files, so the two cannot disagree on them.
func Bundle(src BundleSource) (Data, error) {
	d := bundleData{regions: map[string][]Region{}, rtt: map[string]map[string]map[string]float64{}}
	for _, p := range regions.Providers() {
		zones, err := src.RegionZones(p)
		if err != nil {
			return nil, err
		}
		eu, err := src.EURegions(p)
		if err != nil {
			return nil, err
		}
		for name, z := range zones {
			zone := forecast.Zone(z)
			if zone != "" {
				if zone, err = forecast.ParseZone(z); err != nil {
					return nil, fmt.Errorf("opa bundle regions/%s: region %s: %w", p, name, err)
				}
			}
			d.regions[p] = append(d.regions[p], Region{Name: name, Zone: zone, EU: eu[name]})
		}
		sortRegions(d.regions[p])
		rtt, err := src.RTT(p)
		if err != nil {
			return nil, err
		}
		if rtt != nil {
			d.rtt[p] = rtt
		}
	}
	return d, nil
}

func (d bundleData) Regions(provider string) []Region {
	return append([]Region(nil), d.regions[provider]...)
}

func (d bundleData) HasLatency(provider string) bool { return d.rtt[provider] != nil }

func (d bundleData) RTT(provider, from, to string) (float64, bool) {
	v, ok := d.rtt[provider][from][to]
	return v, ok
}
