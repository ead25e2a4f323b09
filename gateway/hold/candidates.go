package hold

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// AnnotationCandidates lists the places the webhook decided among — each
// grid zone with the region (Jobs) or member cluster (bindings) it pins to
// — for the controller to re-decide the place as well as the time while
// nothing has started: a held Job (its pod template's scheduling
// directives stay mutable while it is suspended and never started) and a
// binding whose scheduling is held (hold.BindingSuspension: scheduled in
// no member); and for the webhook to move a placed binding Karmada evicts
// from its member (recorded on bindings whether held or not). The
// signature covers it (sign.go), so nothing moves to a place the webhook
// did not admit. Absent (a Pod, whose node affinity
// may only be narrowed while gated; a single candidate; a decision made
// before it existed): the controller moves the time only.
const AnnotationCandidates = "carbongate.io/candidates"

// MaxCandidates bounds the places recorded: the candidates annotation of
// a workload whose pods may run in any of a provider's regions stays a few
// kilobytes.
const MaxCandidates = 64

// Candidate is a place a held workload may run in: a grid zone and what
// pins the workload there.
type Candidate struct {
	Zone    string `json:"zone"`
	Region  string `json:"region,omitempty"`  // the node region a Job's pods are pinned to
	Cluster string `json:"cluster,omitempty"` // the member cluster a binding is narrowed to
}

// FormatCandidates returns cs as the value of AnnotationCandidates, sorted
// by zone; "" when there are fewer than two (nothing to move between) or
// more than MaxCandidates.
func FormatCandidates(cs []Candidate) string {
	if len(cs) < 2 || len(cs) > MaxCandidates {
		return ""
	}
	cs = slices.SortedFunc(slices.Values(cs), func(a, b Candidate) int { return strings.Compare(a.Zone, b.Zone) })
	b, err := json.Marshal(cs)
	if err != nil { // strings only: cannot happen
		return ""
	}
	return string(b)
}

// ParseCandidates reads AnnotationCandidates of a: ok is false when it is
// absent; an error says it is malformed (no zone, a zone twice).
func ParseCandidates(a map[string]string) (cs []Candidate, ok bool, err error) {
	v, ok := a[AnnotationCandidates]
	if !ok {
		return nil, false, nil
	}
	if err := json.Unmarshal([]byte(v), &cs); err != nil {
		return nil, true, fmt.Errorf("annotation %s: %v", AnnotationCandidates, err)
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if c.Zone == "" || seen[c.Zone] {
			return nil, true, fmt.Errorf("annotation %s: zone %q empty or listed twice", AnnotationCandidates, c.Zone)
		}
		seen[c.Zone] = true
	}
	return cs, true, nil
}

// Zones returns the zones of cs, in order.
func Zones(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Zone
	}
	return out
}

// Find returns the candidate of zone in cs.
func Find(cs []Candidate, zone string) (Candidate, bool) {
	i := slices.IndexFunc(cs, func(c Candidate) bool { return c.Zone == zone })
	if i < 0 {
		return Candidate{}, false
	}
	return cs[i], true
}
