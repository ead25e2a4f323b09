package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// candidate is an eligible region with its round-trip time from the origin.
type candidate struct {
	Region
	rtt float64
}

// eligibility is the outcome of steps 2 to 6 of the decision procedure.
type eligibility struct {
	zones []forecast.Zone             // distinct zones of the eligible regions, sorted
	reps  map[forecast.Zone]candidate // each zone's representative region
	why   []reason                    // what removed regions, in filter order
}

// reason is why n regions were removed (n = 0: a remark without a count).
type reason struct {
	n    int
	what string
}

// checkOrigin returns the origin region of s, or a message naming
// spec.originRegion when it is not a region of s.Provider. Names match
// exactly, as in the region table.
func checkOrigin(rs []Region, s spec) (Region, string) {
	for _, r := range rs {
		if r.Name == s.OriginRegion {
			return r, ""
		}
	}
	if len(rs) == 0 {
		return Region{}, fmt.Sprintf("spec.originRegion: provider %s has no regions in the region table", s.Provider)
	}
	msg := fmt.Sprintf("spec.originRegion: %q is not a region of %s", s.OriginRegion, s.Provider)
	for _, r := range rs {
		if strings.EqualFold(r.Name, s.OriginRegion) {
			return Region{}, msg + fmt.Sprintf(" (region names are case-sensitive: did you mean %q?)", r.Name)
		}
	}
	return Region{}, msg
}

// eligible filters the regions rs of s.Provider (the origin among them) by
// latency from the origin, residency and grid zone, and picks each zone's
// representative: the region with the lowest round-trip time from the
// origin, ties broken by name.
func eligible(d Data, rs []Region, s spec) eligibility {
	var e eligibility
	var keep []candidate
	if !d.HasLatency(s.Provider) {
		for _, r := range rs {
			if r.Name == s.OriginRegion {
				keep = append(keep, candidate{Region: r})
			}
		}
		if len(rs) > 1 {
			e.why = append(e.why, reason{what: fmt.Sprintf("no latency data for provider %s: only the origin region qualifies", s.Provider)})
		}
	} else {
		var beyond, unmeasured int
		for _, r := range rs {
			rtt, ok := 0.0, true
			if r.Name != s.OriginRegion {
				rtt, ok = d.RTT(s.Provider, s.OriginRegion, r.Name)
			}
			switch {
			case !ok:
				unmeasured++
			case rtt > s.MaxLatencyMs:
				beyond++
			default:
				keep = append(keep, candidate{Region: r, rtt: rtt})
			}
		}
		if beyond > 0 {
			e.why = append(e.why, reason{beyond, fmt.Sprintf("beyond %s ms of %s", strconv.FormatFloat(s.MaxLatencyMs, 'f', -1, 64), s.OriginRegion)})
		}
		if unmeasured > 0 {
			e.why = append(e.why, reason{unmeasured, "without a latency measurement from " + s.OriginRegion})
		}
	}
	if s.ResidencyEU {
		n := len(keep)
		keep = slices.DeleteFunc(keep, func(c candidate) bool { return !c.EU })
		if n > len(keep) {
			e.why = append(e.why, reason{n - len(keep), "outside the EU"})
		}
	}
	n := len(keep)
	keep = slices.DeleteFunc(keep, func(c candidate) bool { return c.Zone == "" })
	if n > len(keep) {
		e.why = append(e.why, reason{n - len(keep), "without a grid zone"})
	}
	e.reps = make(map[forecast.Zone]candidate, len(keep))
	for _, c := range keep {
		cur, ok := e.reps[c.Zone]
		if !ok || cmp.Or(cmp.Compare(c.rtt, cur.rtt), cmp.Compare(c.Name, cur.Name)) < 0 {
			e.reps[c.Zone] = c
		}
	}
	for z := range e.reps {
		e.zones = append(e.zones, z)
	}
	slices.Sort(e.zones)
	return e
}

// emptyMessage says why no region is eligible, e.g. "no eligible region:
// 12 regions beyond 40 ms of westeurope, 3 outside the EU, 1 without a grid
// zone": the first count names its noun.
func (e eligibility) emptyMessage() string {
	if len(e.why) == 0 {
		return "no eligible region"
	}
	parts := make([]string, len(e.why))
	named := false
	for i, r := range e.why {
		switch {
		case r.n == 0:
			parts[i] = r.what
		case named:
			parts[i] = fmt.Sprintf("%d %s", r.n, r.what)
		default:
			named = true
			noun := "regions"
			if r.n == 1 {
				noun = "region"
			}
			parts[i] = fmt.Sprintf("%d %s %s", r.n, noun, r.what)
		}
	}
	return "no eligible region: " + strings.Join(parts, ", ")
}
