package watch_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/watch"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	at := func(name, alias string, version int64) registry.AliasTarget {
		return registry.AliasTarget{Name: name, Alias: alias, Version: version}
	}
	cases := []struct {
		note             string
		old, next        []registry.AliasTarget
		changed, removed []registry.AliasTarget
	}{
		{"both empty", nil, nil, nil, nil},
		{"first snapshot", nil, []registry.AliasTarget{at("b", "champion", 1), at("a", "champion", 2)},
			[]registry.AliasTarget{at("a", "champion", 2), at("b", "champion", 1)}, nil},
		{"unchanged", []registry.AliasTarget{at("a", "champion", 1)}, []registry.AliasTarget{at("a", "champion", 1)}, nil, nil},
		{"promoted", []registry.AliasTarget{at("a", "champion", 1)}, []registry.AliasTarget{at("a", "champion", 2)},
			[]registry.AliasTarget{at("a", "champion", 2)}, nil},
		{"removed", []registry.AliasTarget{at("a", "champion", 1), at("a", "challenger", 3)}, []registry.AliasTarget{at("a", "champion", 1)},
			nil, []registry.AliasTarget{at("a", "challenger", 3)}},
		{"same alias, other model", []registry.AliasTarget{at("a", "champion", 1)}, []registry.AliasTarget{at("b", "champion", 1)},
			[]registry.AliasTarget{at("b", "champion", 1)}, []registry.AliasTarget{at("a", "champion", 1)}},
		{"mixed, any order",
			[]registry.AliasTarget{at("z", "x", 1), at("a", "champion", 1), at("m", "champion", 4)},
			[]registry.AliasTarget{at("m", "champion", 5), at("a", "champion", 1), at("a", "canary", 2)},
			[]registry.AliasTarget{at("a", "canary", 2), at("m", "champion", 5)},
			[]registry.AliasTarget{at("z", "x", 1)}},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			changed, removed := watch.Diff(tc.old, tc.next)
			if !slices.Equal(changed, tc.changed) || !slices.Equal(removed, tc.removed) {
				t.Fatalf("Diff = %v, %v; want %v, %v", changed, removed, tc.changed, tc.removed)
			}
		})
	}
}

func ExampleDiff() {
	old := []registry.AliasTarget{
		{Name: "carbon-forecaster-DE", Alias: "champion", Version: 3},
		{Name: "carbon-forecaster-FR", Alias: "champion", Version: 1},
	}
	next := []registry.AliasTarget{
		{Name: "carbon-forecaster-DE", Alias: "champion", Version: 4},
	}
	changed, removed := watch.Diff(old, next)
	fmt.Println("load:", changed)
	fmt.Println("unload:", removed)
	// Output:
	// load: [{carbon-forecaster-DE champion 4}]
	// unload: [{carbon-forecaster-FR champion 1}]
}
