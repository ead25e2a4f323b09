package mlflowclient_test

import (
	"fmt"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowclient"
)

func TestFormatFilter(t *testing.T) {
	t.Parallel()
	c := func(key, op string, values ...string) registry.Clause {
		return registry.Clause{Key: key, Op: op, Values: values}
	}
	cases := []struct {
		note string
		in   []registry.Clause
		want string // "" with bad: EINVALID
		bad  bool
	}{
		{"empty", nil, "", false},
		{"name", []registry.Clause{c("name", "=", "m")}, "name = 'm'", false},
		{"single quote", []registry.Clause{c("name", "=", "it's")}, `name = "it's"`, false},
		{"double quote", []registry.Clause{c("name", "=", `say "hi"`)}, `name = 'say "hi"'`, false},
		{"backslash kept", []registry.Clause{c("name", "LIKE", `50\%`)}, `name LIKE '50\%'`, false},
		{"operator case", []registry.Clause{c("name", "ilike", "a%")}, "name ILIKE 'a%'", false},
		{"IN", []registry.Clause{c("run_id", "IN", "a", "it's")}, `run_id IN ('a', "it's")`, false},
		{"version number", []registry.Clause{c("version_number", "=", "12")}, "version_number = 12", false},
		{"version not a number", []registry.Clause{c("version_number", "=", "one")}, "version_number = 'one'", false},
		{"tag", []registry.Clause{c("tags.zone", "=", "DE")}, "tags.zone = 'DE'", false},
		{"dotted tag", []registry.Clause{c("tags.a.b", "=", "x")}, "tags.a.b = 'x'", false},
		{"tag with space", []registry.Clause{c("tags.my key", "=", "x")}, "tags.`my key` = 'x'", false},
		{"AND", []registry.Clause{c("name", "=", "m"), c("tags.zone", "!=", "FR")}, "name = 'm' AND tags.zone != 'FR'", false},
		{"both quotes", []registry.Clause{c("name", "=", `it's "x"`)}, "", true},
		{"trailing backslash", []registry.Clause{c("name", "=", `a\`)}, "", true},
		{"key injection", []registry.Clause{c("name = 'x' OR name", "=", "y")}, "", true},
		{"operator injection", []registry.Clause{c("name", "= 'x' OR name =", "y")}, "", true},
		{"tag key with backtick", []registry.Clause{c("tags.a`b", "=", "y")}, "", true},
		{"empty tag key", []registry.Clause{c("tags.", "=", "y")}, "", true},
		{"no value", []registry.Clause{c("name", "=")}, "", true},
		{"empty IN", []registry.Clause{c("name", "IN")}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			got, err := mlflowclient.FormatFilter(tc.in)
			if tc.bad {
				if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "filter" {
					t.Fatalf("FormatFilter(%v) = %q, %v; want EINVALID naming filter", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FormatFilter(%v) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func ExampleFormatFilter() {
	f, err := mlflowclient.FormatFilter([]registry.Clause{
		{Key: "name", Op: "LIKE", Values: []string{"carbon-forecaster-%"}},
		{Key: "tags.zone", Op: "=", Values: []string{"DE"}},
	})
	fmt.Println(f, err)
	// Output: name LIKE 'carbon-forecaster-%' AND tags.zone = 'DE' <nil>
}
