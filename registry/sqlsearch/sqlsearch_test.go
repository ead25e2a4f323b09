package sqlsearch

import (
	"reflect"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// The targets of a PostgreSQL-like backend, with and without a
// workspace column.
var (
	pg          = Dialect{AnyArray: true, TagKey: "t.key", TagValue: "t.value"}
	crate       = Dialect{TagKey: `t."key"`, TagValue: `t."value"`}
	modelTarget = Target{
		From:     "registered_models m",
		Attrs:    map[string]string{"name": "m.name"},
		Tags:     "registered_model_tags",
		TagJoin:  "t.name = m.name",
		Orders:   map[string]string{"name": `m.name COLLATE "C"`, "creation_timestamp": "m.creation_time", "last_updated_timestamp": "m.last_updated_time"},
		Tiebreak: []registry.Order{{Key: "name"}},
	}
	versionTarget = Target{
		From:     "model_versions v",
		Attrs:    map[string]string{"name": "v.name", "run_id": "v.run_id", "source_path": "v.source", "version_number": "v.version"},
		IntAttrs: map[string]bool{"version_number": true},
		Tags:     "model_version_tags",
		TagJoin:  "t.name = v.name AND t.version = v.version",
		Orders: map[string]string{"name": `v.name COLLATE "C"`, "version_number": "v.version",
			"creation_timestamp": "v.creation_time", "last_updated_timestamp": "v.last_updated_time"},
		Tiebreak: []registry.Order{{Key: "name"}, {Key: "version_number", Desc: true}},
	}
)

func withWorkspace(t Target) Target {
	t.TagJoin += " AND t.workspace = " + t.From[len(t.From)-1:] + ".workspace"
	return t
}

func cl(key, op string, values ...string) registry.Clause {
	return registry.Clause{Key: key, Op: op, Values: values}
}

func TestPredicate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note   string
		target Target
		ws     bool
		clause registry.Clause
		sql    string
		args   []any
	}{
		{"name =", modelTarget, false, cl("name", "=", "a"), "m.name = $1", []any{"a"}},
		{"name !=", modelTarget, false, cl("name", "!=", "a"), "m.name <> $1", []any{"a"}},
		{"name like, lower-case op", modelTarget, false, cl("name", "like", "a%"), "m.name LIKE $1", []any{"a%"}},
		{"name ILIKE", modelTarget, false, cl("name", "ILIKE", "A%"), "m.name ILIKE $1", []any{"A%"}},
		{"model tag", modelTarget, false, cl("tags.zone", "=", "DE"),
			"EXISTS (SELECT 1 FROM registered_model_tags t WHERE t.name = m.name AND t.key = $1 AND t.value = $2)", []any{"zone", "DE"}},
		{"model tag, workspace", modelTarget, true, cl("tags.zone", "LIKE", "D%"),
			"EXISTS (SELECT 1 FROM registered_model_tags t WHERE t.name = m.name AND t.workspace = m.workspace AND t.key = $1 AND t.value LIKE $2)", []any{"zone", "D%"}},
		{"version tag", versionTarget, false, cl("tags.a.b", "!=", "x"),
			"EXISTS (SELECT 1 FROM model_version_tags t WHERE t.name = v.name AND t.version = v.version AND t.key = $1 AND t.value <> $2)", []any{"a.b", "x"}},
		{"source_path", versionTarget, false, cl("source_path", "=", "s3://b"), "v.source = $1", []any{"s3://b"}},
		{"run_id IN", versionTarget, false, cl("run_id", "IN", "a", "b"), "v.run_id = ANY($1)", []any{[]string{"a", "b"}}},
		{"version_number =", versionTarget, false, cl("version_number", "=", "3"), "v.version = $1", []any{int64(3)}},
		{"version_number IN", versionTarget, false, cl("version_number", "IN", "1", "2"), "v.version = ANY($1)", []any{[]int64{1, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			var a Args
			target := tc.target
			if tc.ws {
				target = withWorkspace(target)
			}
			got, err := pg.Predicate(target, tc.clause, &a)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.sql {
				t.Fatalf("sql=%q, want %q", got, tc.sql)
			}
			if !reflect.DeepEqual([]any(a), tc.args) {
				t.Fatalf("args=%#v, want %#v", a, tc.args)
			}
		})
	}
}

func TestPredicateInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note   string
		target Target
		clause registry.Clause
	}{
		{"unknown model key", modelTarget, cl("run_id", "=", "x")},
		{"unknown version key", versionTarget, cl("description", "=", "x")},
		{"unknown operator", modelTarget, cl("name", ">", "x")},
		{"SQL as operator", modelTarget, cl("name", "= 'x' OR TRUE --", "x")},
		{"two values for =", modelTarget, cl("name", "=", "a", "b")},
		{"IN without values", versionTarget, cl("run_id", "IN")},
		{"IN on a tag", modelTarget, cl("tags.zone", "IN", "DE")},
		{"empty tag key", modelTarget, cl("tags.", "=", "x")},
		{"version_number LIKE", versionTarget, cl("version_number", "LIKE", "1%")},
		{"version_number not a number", versionTarget, cl("version_number", "=", "1 OR 1=1")},
		{"version_number too big", versionTarget, cl("version_number", "IN", "1", "99999999999")},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			var a Args
			_, err := pg.Predicate(tc.target, tc.clause, &a)
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "filter" {
				t.Fatalf("err=%v, want EINVALID on field filter", err)
			}
		})
	}
}

// TestSearchSQLKeepsValuesOut: whatever the values, the SQL text is built
// from constants and placeholders only.
func TestSearchSQLKeepsValuesOut(t *testing.T) {
	t.Parallel()
	evil := `x'); DROP TABLE registered_models; --`
	s := registry.Search{
		Filter: []registry.Clause{
			cl("name", "LIKE", evil), cl("tags."+evil, "=", evil), cl("run_id", "IN", evil, evil),
		},
		OrderBy:    []registry.Order{{Key: "last_updated_timestamp", Desc: true}},
		MaxResults: 10, Offset: 20,
	}
	for _, ws := range []bool{false, true} {
		var base []string
		if ws {
			base = []string{"v.workspace = 'default'"}
		}
		var a Args
		sql, err := pg.Select(versionTarget, s, "v.name", base, &a)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sql, "DROP") || strings.Contains(sql, evil) {
			t.Fatalf("value spliced into SQL: %s", sql)
		}
		if !strings.HasSuffix(sql, "ORDER BY v.last_updated_time DESC, v.name COLLATE \"C\" ASC, v.version DESC LIMIT $5 OFFSET $6") {
			t.Fatalf("sql=%s", sql)
		}
		if got := a[len(a)-2:]; !reflect.DeepEqual(got, Args{int64(11), int64(20)}) {
			t.Fatalf("limit/offset args=%v, want [11 20]", got)
		}
		if ws != strings.Contains(sql, "v.workspace = 'default'") {
			t.Fatalf("workspace=%v but sql=%s", ws, sql)
		}
	}
}

func TestOrderBy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note   string
		target Target
		orders []registry.Order
		want   string
		err    bool
	}{
		{"models default", modelTarget, nil, `m.name COLLATE "C" ASC`, false},
		{"versions default", versionTarget, nil, `v.name COLLATE "C" ASC, v.version DESC`, false},
		{"models by time", modelTarget, []registry.Order{{Key: "creation_timestamp"}}, `m.creation_time ASC, m.name COLLATE "C" ASC`, false},
		{"versions version asc", versionTarget, []registry.Order{{Key: "version_number"}}, `v.version ASC, v.name COLLATE "C" ASC`, false},
		{"name desc replaces the tiebreak", modelTarget, []registry.Order{{Key: "name", Desc: true}}, `m.name COLLATE "C" DESC`, false},
		{"version_number on models", modelTarget, []registry.Order{{Key: "version_number"}}, "", true},
		{"unknown key", versionTarget, []registry.Order{{Key: "run_id"}}, "", true},
		{"duplicate", modelTarget, []registry.Order{{Key: "name"}, {Key: "name", Desc: true}}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			got, err := tc.target.OrderBy(tc.orders)
			if tc.err {
				if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "order_by" {
					t.Fatalf("err=%v, want EINVALID on order_by", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("orderBy=%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s     registry.Search
		field string
	}{
		{registry.Search{MaxResults: 0}, "max_results"},
		{registry.Search{MaxResults: 1001}, "max_results"},
		{registry.Search{MaxResults: 10, Offset: -1}, "page_token"},
	} {
		if _, _, err := Page(tc.s); forecast.ErrorField(err) != tc.field {
			t.Errorf("page(%+v) = %v, want EINVALID on %s", tc.s, err, tc.field)
		}
	}
	if l, o, err := Page(registry.Search{MaxResults: 1000, Offset: 5}); l != 1001 || o != 5 || err != nil {
		t.Fatalf("page = %d, %d, %v", l, o, err)
	}
}

// CrateDB's dialect: IN takes a list of parameters, tag columns are quoted.
func TestCrateDialect(t *testing.T) {
	t.Parallel()
	var a Args
	got, err := crate.Predicate(versionTarget, cl("version_number", "IN", "1", " 2"), &a)
	if want := "v.version IN ($1, $2)"; err != nil || got != want || !reflect.DeepEqual(a, Args{int64(1), int64(2)}) {
		t.Fatalf("IN: %q %v %v; want %q [1 2]", got, a, err, want)
	}
	a = nil
	got, err = crate.Predicate(modelTarget, cl("tags.k", "ILIKE", "v%"), &a)
	if want := `EXISTS (SELECT 1 FROM registered_model_tags t WHERE t.name = m.name AND t."key" = $1 AND t."value" ILIKE $2)`; err != nil || got != want {
		t.Fatalf("tag: %q, %v; want %q", got, err, want)
	}
}

func TestTrim(t *testing.T) {
	t.Parallel()
	if p, more := Trim([]int{1, 2, 3}, 2); !reflect.DeepEqual(p, []int{1, 2}) || !more {
		t.Fatalf("Trim = %v, %v", p, more)
	}
	if p, more := Trim([]int{1, 2}, 2); len(p) != 2 || more {
		t.Fatalf("Trim = %v, %v", p, more)
	}
}
