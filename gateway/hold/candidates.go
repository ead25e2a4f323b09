package hold

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// AnnotationCandidates lists the places the webhook decided among — each
// grid zone with the region a Job's pods are pinned to, or every member
// cluster a binding's placement allows with its zone — for the controller to re-decide the place as well as the time while
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
// by zone (then cluster); "" when there are fewer than two (nothing to
// move between) or more than MaxCandidates.
func FormatCandidates(cs []Candidate) string {
	if len(cs) < 2 || len(cs) > MaxCandidates {
		return ""
	}
	cs = slices.SortedFunc(slices.Values(cs), func(a, b Candidate) int {
		return cmp.Or(strings.Compare(a.Zone, b.Zone), strings.Compare(a.Cluster, b.Cluster))
	})
	b, err := json.Marshal(cs)
	if err != nil { // strings only: cannot happen
		return ""
	}
	return string(b)
}

// ParseCandidates reads AnnotationCandidates of a: ok is false when it is
// absent; an error says it is malformed (no zone; a region's zone twice;
// a member cluster twice). A zone may have several member clusters
// (bindings: every member the placement allows is a candidate), but one
// region at most (Jobs: one region stands for its zone).
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
		key := "cluster " + c.Cluster
		if c.Cluster == "" {
			key = "zone " + c.Zone
		}
		if c.Zone == "" || seen[key] {
			return nil, true, fmt.Errorf("annotation %s: zone %q empty, or %s listed twice", AnnotationCandidates, c.Zone, key)
		}
		seen[key] = true
	}
	return cs, true, nil
}

// Zones returns the distinct zones of cs, in order.
func Zones(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.Zone) {
			out = append(out, c.Zone)
		}
	}
	return out
}

// Find returns the candidate of zone in cs for the workload key
// (WorkloadKey): from when it is of that zone (a workload keeps its
// place); else the first of them Ranked gives for key.
func Find(cs []Candidate, zone, key string, from Candidate) (Candidate, bool) {
	var in []Candidate
	for _, c := range cs {
		if c.Zone == zone {
			in = append(in, c)
		}
	}
	if len(in) == 0 {
		return Candidate{}, false
	}
	if slices.Contains(in, from) {
		return from, true
	}
	return Ranked(in, key, func(c Candidate) Candidate { return c })[0], true
}

// Ranked returns places (equally green: of one grid zone), each the
// candidate place gives, in the order the workload key prefers them:
// highest spreadHash first. The webhook ranks its member clusters and
// regions by it, and Find the recorded candidates, so both pick alike.
func Ranked[T any](places []T, key string, place func(T) Candidate) []T {
	return slices.SortedStableFunc(slices.Values(places), func(a, b T) int {
		return cmp.Compare(spreadHash(key, place(b)), spreadHash(key, place(a)))
	})
}

// WorkloadKey is the key Find spreads a workload by.
func WorkloadKey(namespace, name string) string { return namespace + "/" + name }

// spreadHash is the rendezvous hash of workload key and candidate c, by
// which Find picks among equivalent places (places of one grid zone): the
// workloads decided for a zone spread evenly over its places, each always
// to the same one, and removing a place moves only the workloads it had.
func spreadHash(key string, c Candidate) uint64 {
	h := fnv.New64a()
	for _, s := range []string{key, c.Cluster, c.Region} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return mix(h.Sum64())
}

// mix is MurmurHash3's 64-bit finalizer: FNV alone leaves the hashes of
// names that differ in their last bytes too close to spread evenly.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
