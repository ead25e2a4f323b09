package casdk

import (
	"fmt"
	"sort"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
)

// place is one location name the API answers to.
type place struct {
	Name     string // as listed by /locations
	Zone     forecast.Zone
	Provider string // "" for a zone id
	Region   string
}

// catalog resolves location names: Azure region names (the SDK's default
// location source) bare; every other cloud region carbongate maps as
// provider:region, and bare too when no other name takes it; zone ids.
// Names are matched case-insensitively.
type catalog struct {
	byName   map[string]place // lower-cased name → place
	list     []place          // one entry per place, by Name
	names    []string         // every name, for suggestions
	unserved func(provider, region string) string
}

// Coordinates gives a cloud region's latitude and longitude, when known.
type Coordinates func(provider, region string) (lat, lon float64, ok bool)

func newCatalog(zones []gateway.ZoneInfo, unserved func(provider, region string) string) *catalog {
	c := &catalog{byName: map[string]place{}, unserved: unserved}
	// Bare names by priority: Azure regions, then zone ids, then other
	// providers' regions that no other name takes.
	var others []place
	for _, z := range zones {
		for _, l := range z.Locations {
			p := place{Name: l.Provider + ":" + l.Region, Zone: z.Zone, Provider: l.Provider, Region: l.Region}
			c.byName[strings.ToLower(p.Name)] = p
			if l.Provider != "azure" {
				others = append(others, p)
				continue
			}
			p.Name = l.Region
			c.byName[strings.ToLower(l.Region)] = p
			c.list = append(c.list, p)
		}
	}
	for _, z := range zones {
		lower := strings.ToLower(string(z.Zone))
		if _, taken := c.byName[lower]; taken {
			continue
		}
		p := place{Name: string(z.Zone), Zone: z.Zone}
		c.byName[lower] = p
		c.list = append(c.list, p)
	}
	count := map[string]int{}
	for _, p := range others {
		count[strings.ToLower(p.Region)]++
	}
	for _, p := range others {
		lower := strings.ToLower(p.Region)
		if _, taken := c.byName[lower]; !taken && count[lower] == 1 {
			p.Name = p.Region
			c.byName[lower] = p
		}
		c.list = append(c.list, p)
	}
	sort.Slice(c.list, func(i, j int) bool { return c.list[i].Name < c.list[j].Name })
	for n := range c.byName {
		c.names = append(c.names, n)
	}
	sort.Strings(c.names)
	return c
}

// resolve returns the place named name, or a 400 naming param: for a real
// cloud region that is not served, why (see Config.Unserved); else the
// nearest names served.
func (c *catalog) resolve(name, param string) (place, error) {
	lower := strings.ToLower(strings.TrimSpace(name))
	p, ok := c.byName[lower]
	if ok {
		return p, nil
	}
	if why := c.why(lower); why != "" {
		return place{}, invalid(param, "location %q is not served: %s; GET /locations lists those that are", clip(name), why)
	}
	msg := fmt.Sprintf("unknown location %q: give an Azure region name (eastus), provider:region (aws:eu-west-1) or a zone id (DE); GET /locations lists them", clip(name))
	if near := regions.Nearest(lower, c.names, 3); len(near) > 0 {
		msg += "; did you mean " + strings.Join(near, ", ") + "?"
	}
	return place{}, invalid(param, "%s", msg)
}

// why asks Unserved about name: provider:region, or a bare name as an Azure
// region.
func (c *catalog) why(lower string) string {
	if c.unserved == nil || len(lower) > 128 {
		return ""
	}
	if p, r, ok := strings.Cut(lower, ":"); ok {
		return c.unserved(p, r)
	}
	return c.unserved("azure", lower)
}

// distinct resolves names, at most max of them, each location once: a
// name given again (in any case) is dropped, so that repeating a location
// costs nothing. Errors are 400s naming param.
func (c *catalog) distinct(names []string, max int, param string) ([]string, []place, error) {
	if len(names) > max {
		return nil, nil, invalid(param, "%d locations; at most %d", len(names), max)
	}
	seen := make(map[string]bool, len(names))
	var kept []string
	var places []place
	for _, n := range names {
		k := strings.ToLower(strings.TrimSpace(n))
		if seen[k] {
			continue
		}
		seen[k] = true
		p, err := c.resolve(n, param)
		if err != nil {
			return nil, nil, err
		}
		kept, places = append(kept, n), append(places, p)
	}
	return kept, places, nil
}
