package watch

import (
	"slices"

	"github.com/carbongate/carbongate/registry"
)

// Diff compares two alias tables: changed holds the aliases of next that
// are new or point at another version than in old, removed the aliases of
// old that next lacks (with the version they pointed at). Both are sorted
// by model name, then alias; the inputs may be in any order.
func Diff(old, next []registry.AliasTarget) (changed, removed []registry.AliasTarget) {
	type key struct{ name, alias string }
	prev := make(map[key]int64, len(old))
	for _, t := range old {
		prev[key{t.Name, t.Alias}] = t.Version
	}
	kept := make(map[key]bool, len(next))
	for _, t := range next {
		k := key{t.Name, t.Alias}
		kept[k] = true
		if v, ok := prev[k]; !ok || v != t.Version {
			changed = append(changed, t)
		}
	}
	for _, t := range old {
		if !kept[key{t.Name, t.Alias}] {
			removed = append(removed, t)
		}
	}
	slices.SortFunc(changed, compareTargets)
	slices.SortFunc(removed, compareTargets)
	return changed, removed
}
