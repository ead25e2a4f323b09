package regions

import (
	"slices"
	"strings"
)

// Nearest returns up to n of names nearest to name by edit distance
// (Levenshtein, case-insensitive), nearest first then alphabetically;
// only names within max(2, len(name)/3) edits count. A name of a length
// far from every name's costs a scan only.
func Nearest(name string, names []string, n int) []string {
	name = strings.ToLower(name)
	n0 := len([]rune(name))
	limit := max(2, n0/3)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, c := range names {
		// Names whose lengths differ by more than limit are further: skip
		// them without the quadratic distance, so that a long hostile name
		// costs no more than a scan.
		if diff := n0 - len([]rune(c)); diff > limit || -diff > limit {
			continue
		}
		if d := distance(name, strings.ToLower(c)); d <= limit {
			cs = append(cs, cand{c, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// distance is the Levenshtein distance of a and b, in runes. Inputs longer
// than 64 runes are cut: a region name is never that long, and the cost
// stays bounded for hostile input.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), 64)], rb[:min(len(rb), 64)]
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
