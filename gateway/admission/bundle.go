package admission

import (
	"fmt"

	opabundle "github.com/carbongate/carbongate/deploy/opa"
	"github.com/carbongate/carbongate/forecast"
)

// bundleData is Data read from the OPA bundle's data files.
type bundleData struct {
	regions map[string][]Region                      // provider → regions, sorted by name
	rtt     map[string]map[string]map[string]float64 // provider → from → to → ms
}

// Bundle returns the Data of the OPA bundle (package opabundle): regions
// and zones from regions/<provider>, EU membership from residency/eu,
// round-trip times from latency/<provider>. The Rego policy reads the same
// files, so the two cannot disagree on them.
func Bundle() (Data, error) {
	res, err := opabundle.LoadResidency()
	if err != nil {
		return nil, err
	}
	d := bundleData{regions: map[string][]Region{}, rtt: map[string]map[string]map[string]float64{}}
	for _, p := range opabundle.Providers() {
		rs, err := opabundle.LoadRegions(p)
		if err != nil {
			return nil, err
		}
		for name, r := range rs.Regions {
			zone := forecast.Zone(r.Zone)
			if zone != "" {
				if zone, err = forecast.ParseZone(r.Zone); err != nil {
					return nil, fmt.Errorf("opabundle regions/%s: region %s: %w", p, name, err)
				}
			}
			_, eu := res.Regions[p][name]
			d.regions[p] = append(d.regions[p], Region{Name: name, Zone: zone, EU: eu})
		}
		sortRegions(d.regions[p])
		l, ok, err := opabundle.LoadLatency(p)
		if err != nil {
			return nil, err
		}
		if ok {
			d.rtt[p] = l.RTT
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
