package filter

import (
	"reflect"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

func cl(key, op string, values ...string) registry.Clause {
	return registry.Clause{Key: key, Op: op, Values: values}
}

func TestParseVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []registry.Clause
	}{
		{"empty", "", nil},
		{"spaces", "  \t\n", nil},
		{"name eq", "name = 'm'", []registry.Clause{cl("name", "=", "m")}},
		{"no spaces", "name='m'", []registry.Clause{cl("name", "=", "m")}},
		{"double quotes", `name = "m"`, []registry.Clause{cl("name", "=", "m")}},
		{"ne", "name != 'm'", []registry.Clause{cl("name", "!=", "m")}},
		{"like lower case", "name like 'carbon-%'", []registry.Clause{cl("name", "LIKE", "carbon-%")}},
		{"ilike", "name ILIKE '%DE%'", []registry.Clause{cl("name", "ILIKE", "%DE%")}},
		{"attribute prefix", "attribute.name = 'm'", []registry.Clause{cl("name", "=", "m")}},
		{"run_id in", "run_id IN ('a1', 'b2')", []registry.Clause{cl("run_id", "IN", "a1", "b2")}},
		{"run_id in one", "run_id in ('a1')", []registry.Clause{cl("run_id", "IN", "a1")}},
		{"source_path", "source_path = 's3://b/m'", []registry.Clause{cl("source_path", "=", "s3://b/m")}},
		{"version number", "version_number = 3", []registry.Clause{cl("version_number", "=", "3")}},
		{"version number quoted", "version_number != '007'", []registry.Clause{cl("version_number", "!=", "7")}},
		{"tag", "tags.zone = 'DE'", []registry.Clause{cl("tags.zone", "=", "DE")}},
		{"tag singular", "tag.zone = 'DE'", []registry.Clause{cl("tags.zone", "=", "DE")}},
		{"tag dotted", "tags.mlflow.source = 'x'", []registry.Clause{cl("tags.mlflow.source", "=", "x")}},
		{"tag backticks", "tags.`my key` = 'x'", []registry.Clause{cl("tags.my key", "=", "x")}},
		{"tag backticks doubled", "tags.`a``b` = 'x'", []registry.Clause{cl("tags.a``b", "=", "x")}},
		{"tag single quoted", "tags.'x y' = 'z'", []registry.Clause{cl("tags.x y", "=", "z")}},
		{"tag double quoted", `tags."a.b c" LIKE 'x%'`, []registry.Clause{cl("tags.a.b c", "LIKE", "x%")}},
		{"escapes kept", `name = 'it''s' AND tags.q = 'a\'b'`, []registry.Clause{cl("name", "=", "it''s"), cl("tags.q", "=", `a\'b`)}},
		{"quote in double quotes", `name = "it's"`, []registry.Clause{cl("name", "=", "it's")}},
		{"and any case", "name = 'a' and tags.x = 'b' AnD run_id = 'c'", []registry.Clause{
			cl("name", "=", "a"), cl("tags.x", "=", "b"), cl("run_id", "=", "c")}},
		{"unicode", "tags.région = 'Île-de-France'", []registry.Clause{cl("tags.région", "=", "Île-de-France")}},
		{"injection is a value", "name = 'x''; DROP TABLE model_versions; --'", []registry.Clause{
			cl("name", "=", "x''; DROP TABLE model_versions; --")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseVersions(tt.in)
			if err != nil {
				t.Fatalf("ParseVersions(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseVersions(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			again, err := ParseVersions(Format(got))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("Format round trip: %q -> %#v, %v", Format(got), again, err)
			}
		})
	}
}

func TestParseModels(t *testing.T) {
	t.Parallel()
	got, err := ParseModels("name LIKE 'carbon-forecaster-%' AND tags.`zone` = 'DE'")
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.Clause{cl("name", "LIKE", "carbon-forecaster-%"), cl("tags.zone", "=", "DE")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		models   bool
		in       string
		contains string
	}{
		{"models: run_id", true, "run_id = 'x'", `invalid attribute key "run_id" for registered models`},
		{"models: version_number", true, "version_number = 1", "invalid attribute key"},
		{"models: IN", true, "name IN ('a')", "invalid comparator"},
		{"unknown key", false, "stage = 'x'", `invalid attribute key "stage"`},
		{"case-sensitive key", false, "NAME = 'x'", "invalid attribute key"},
		{"unknown entity", false, "params.x = 'y'", `invalid entity type "params"`},
		{"attribute quoted", false, "attribute.`name` = 'x'", "invalid attribute key"},
		{"OR", false, "name = 'a' OR name = 'b'", "expected AND or the end of the filter, found \"OR\" at offset 11"},
		{"missing AND", false, "name = 'a' name = 'b'", "expected AND"},
		{"trailing AND", false, "name = 'a' AND", "expected a key"},
		{"leading AND", false, "AND name = 'a'", "invalid attribute key \"AND\""},
		{"NOT LIKE", false, "name NOT LIKE 'a'", "invalid comparator \"NOT\""},
		{"double equals", false, "name == 'a'", `invalid comparator "=="`},
		{"lt on name", false, "name < 'a'", "invalid comparator"},
		{"lt on version", false, "version_number > 1", "invalid comparator \">\" for version_number"},
		{"like on version", false, "version_number LIKE '1'", "invalid comparator"},
		{"unquoted value", false, "name = abc", "expected a quoted string value for name"},
		{"number for name", false, "name = 12", "expected a quoted string value"},
		{"float version", false, "version_number = 1.5", "must be compared with an integer"},
		{"word version", false, "version_number = 'one'", "must be compared with an integer"},
		{"missing value", false, "name =", "found the end of the filter"},
		{"missing op", false, "name", "expected a comparator"},
		{"unterminated", false, "name = 'abc", "unterminated quoted string at offset 7"},
		{"unterminated backslash", false, `name = 'abc\'`, "unterminated"},
		{"list for name", false, "name = ('a')", "only run_id IN takes a list"},
		{"empty list", false, "run_id IN ()", "expected a quoted string in the list"},
		{"IN without list", false, "run_id IN 'a'", "IN needs a parenthesised list"},
		{"unclosed list", false, "run_id IN ('a'", "expected ',' or ')'"},
		{"list of numbers", false, "run_id IN (1, 2)", "expected a quoted string"},
		{"empty tag key", false, "tags.`` = 'x'", "empty tag key"},
		{"tag ends in dot", false, "tags. = 'x'", "a name must follow '.'"},
		{"semicolon", false, "name = 'a'; DROP TABLE x", "unexpected character ';' at offset 10"},
		{"comment", false, "name = 'a' -- x", "unexpected character '-'"},
		{"parenthesised", false, "(name = 'a')", "expected a key"},
		{"nul", false, "name = 'a\x00'", "NUL byte"},
		{"bad utf8", false, "name = '\xff'", "not valid UTF-8"},
		{"too long", false, strings.Repeat(" ", MaxFilterLen+1), "limit is"},
		{"too many clauses", false, strings.Repeat("name = 'a' AND ", MaxClauses) + "name = 'a'", "too many comparisons"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parse := ParseVersions
			if tt.models {
				parse = ParseModels
			}
			got, err := parse(tt.in)
			if err == nil {
				t.Fatalf("parse(%q) = %#v, want an error", tt.in, got)
			}
			if code, field := forecast.ErrorCode(err), forecast.ErrorField(err); code != forecast.EINVALID || field != "filter" {
				t.Fatalf("error code, field = %s, %s, want invalid, filter", code, field)
			}
			if msg := forecast.ErrorMessage(err); !strings.Contains(msg, tt.contains) {
				t.Fatalf("message %q does not contain %q", msg, tt.contains)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []registry.Clause
		want string
	}{
		{nil, ""},
		{[]registry.Clause{cl("name", "=", "m"), cl("version_number", "!=", "3")}, "name = 'm' AND version_number != 3"},
		{[]registry.Clause{cl("tags.my key", "LIKE", "it's")}, "tags.`my key` LIKE \"it's\""},
		{[]registry.Clause{cl("tags.a`b", "=", "x")}, "tags.\"a`b\" = 'x'"},
		{[]registry.Clause{cl("run_id", "IN", "a", "b")}, "run_id IN ('a', 'b')"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%#v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseOrderBy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		terms    []string
		versions bool
		want     []registry.Order
		err      string
	}{
		{name: "none"},
		{name: "name", terms: []string{"name"}, want: []registry.Order{{Key: "name"}}},
		{name: "desc any case", terms: []string{"last_updated_timestamp desc", " name  ASC "},
			want: []registry.Order{{Key: "last_updated_timestamp", Desc: true}, {Key: "name"}}},
		{name: "timestamp alias", terms: []string{"timestamp DESC"}, want: []registry.Order{{Key: "last_updated_timestamp", Desc: true}}},
		{name: "backticks", terms: []string{"`creation_timestamp` DESC"}, want: []registry.Order{{Key: "creation_timestamp", Desc: true}}},
		{name: "versions", versions: true, terms: []string{"version_number DESC", "attribute.name"},
			want: []registry.Order{{Key: "version_number", Desc: true}, {Key: "name"}}},
		{name: "models: version_number", terms: []string{"version_number"}, err: `invalid order_by key "version_number"`},
		{name: "versions: timestamp", versions: true, terms: []string{"timestamp"}, err: "invalid order_by key"},
		{name: "duplicate", terms: []string{"name", "name DESC"}, err: "twice"},
		{name: "duplicate alias", terms: []string{"timestamp", "last_updated_timestamp"}, err: "twice"},
		{name: "bad direction", terms: []string{"name UP"}, err: `invalid ordering "UP"`},
		{name: "too many words", terms: []string{"name ASC DESC"}, err: "expected <key> [ASC|DESC]"},
		{name: "empty", terms: []string{" "}, err: "expected <key>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseOrderBy(tt.terms, tt.versions)
			if tt.err != "" {
				if err == nil || forecast.ErrorField(err) != "order_by" || !strings.Contains(forecast.ErrorMessage(err), tt.err) {
					t.Fatalf("ParseOrderBy(%q) = %v, %v; want error containing %q", tt.terms, got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseOrderBy(%q) = %#v, %v; want %#v", tt.terms, got, err, tt.want)
			}
		})
	}
}

func TestPageToken(t *testing.T) {
	t.Parallel()
	// The token MLflow writes for offset 100: base64 of '{"offset": 100}'.
	if got, want := EncodePageToken(100), "eyJvZmZzZXQiOiAxMDB9"; got != want {
		t.Fatalf("EncodePageToken(100) = %q, want %q", got, want)
	}
	for _, off := range []int{0, 1, 999, MaxOffset} {
		got, err := DecodePageToken(EncodePageToken(off))
		if err != nil || got != off {
			t.Fatalf("DecodePageToken(EncodePageToken(%d)) = %d, %v", off, got, err)
		}
	}
	ok := map[string]int{
		"":                     0,
		"eyJvZmZzZXQiOiAiNyJ9": 7, // {"offset": "7"}
		"eyJvZmZzZXQiOjV9":     5, // {"offset":5}, unpadded form of the same
	}
	for in, want := range ok {
		if got, err := DecodePageToken(in); err != nil || got != want {
			t.Errorf("DecodePageToken(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"!!!", "bm90IGpzb24=", "e30=", "eyJvZmZzZXQiOiAtMX0=", "eyJvZmZzZXQiOiAxLjV9", "eyJvZmZzZXQiOiA5OTk5OTk5OTk5OTl9"} {
		_, err := DecodePageToken(bad)
		if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "page_token" {
			t.Errorf("DecodePageToken(%q) error = %v, want invalid page_token", bad, err)
		}
	}
}

// FuzzParse checks that no input panics and that whatever parses formats
// back to a filter that parses to the same clauses.
//
// fuzz budget: 40000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "name = 'm'", "name LIKE 'carbon-%' AND tags.zone = 'DE'",
		"run_id IN ('a', 'b') AND version_number != 3", "tags.`a``b` = \"it's\"",
		`tags."x\"y" = 'a\'b' and source_path ilike '%s3%'`,
		"name = 'x'; DROP TABLE registered_models; --", "name = '' OR 1=1 --'",
		"name = 'a' UNION SELECT * FROM registered_model_tags", "tags.`x`; DELETE FROM model_versions` = '1'",
		"version_number = -1", "name = 'a\\\\'", "name = \"\"\"\"", "run_id IN ('a',)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) ([]registry.Clause, error){ParseModels, ParseVersions} {
			cs, err := parse(s)
			if err != nil {
				if forecast.ErrorCode(err) != forecast.EINVALID {
					t.Fatalf("parse(%q): error code %s", s, forecast.ErrorCode(err))
				}
				continue
			}
			out := Format(cs)
			again, err := parse(out)
			if err != nil {
				t.Fatalf("parse(%q) ok, but its format %q fails: %v", s, out, err)
			}
			if !reflect.DeepEqual(again, cs) && !(len(again) == 0 && len(cs) == 0) {
				t.Fatalf("parse(%q) = %#v; format %q parses to %#v", s, cs, out, again)
			}
			if Format(again) != out {
				t.Fatalf("format not stable: %q then %q", out, Format(again))
			}
		}
	})
}
