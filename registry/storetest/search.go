package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// modelNames returns the names of one page of SearchModels.
func (e *env) modelNames(t testing.TB, s registry.Search) []string {
	t.Helper()
	names, _ := e.modelPage(t, s)
	return names
}

func (e *env) modelPage(t testing.TB, s registry.Search) ([]string, bool) {
	t.Helper()
	page, more, err := e.s.SearchModels(e.ctx, s)
	if err != nil {
		t.Fatalf("SearchModels(%s): %v", describe(s), err)
	}
	var names []string
	for _, m := range page {
		names = append(names, m.Name)
	}
	return names, more
}

// versionKeys returns one page of SearchVersions as "name/version".
func (e *env) versionKeys(t testing.TB, s registry.Search) []string {
	t.Helper()
	keys, _ := e.versionPage(t, s)
	return keys
}

func (e *env) versionPage(t testing.TB, s registry.Search) ([]string, bool) {
	t.Helper()
	page, more, err := e.s.SearchVersions(e.ctx, s)
	if err != nil {
		t.Fatalf("SearchVersions(%s): %v", describe(s), err)
	}
	var keys []string
	for _, v := range page {
		if v.CurrentStage == registry.StageDeleted {
			t.Fatalf("SearchVersions(%s) returned the deleted version %s", describe(s), versionKey(v))
		}
		keys = append(keys, versionKey(v))
	}
	return keys, more
}

// sorted returns a sorted copy, for comparing result sets whose names
// databases may collate differently.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

type filterCase struct {
	note   string
	filter []registry.Clause
	want   []string // in any order
}

func testSearchModelsFilter(t *testing.T, e *env) {
	models := []struct {
		name string
		tags []registry.Tag
	}{
		{"alpha", []registry.Tag{tag("zone", "DE"), tag("team", "fc")}},
		{"Alpha-2", nil},
		{"beta", []registry.Tag{tag("zone", "FR"), tag("o'k", "1")}},
		{"gamma_1", nil},
		{"gammax1", nil},
		{"50%", []registry.Tag{tag("zone", "50%")}},
		{"500", nil},
		{"it's", []registry.Tag{tag("zone", "it's")}},
		{`back\slash`, []registry.Tag{tag("zone", `a\b`)}},
		{`x' OR '1'='1`, nil},
		{`say "hi"`, nil},
	}
	var all []string
	for _, m := range models {
		e.createModel(t, m.name, m.tags...)
		all = append(all, m.name)
	}
	c := clause
	cases := []filterCase{
		{"no filter", nil, all},
		{"name =", []registry.Clause{c("name", "=", "alpha")}, []string{"alpha"}},
		{"name = is case-sensitive", []registry.Clause{c("name", "=", "ALPHA")}, nil},
		{"name !=", []registry.Clause{c("name", "!=", "alpha")}, all[1:]},
		{"LIKE prefix", []registry.Clause{c("name", "LIKE", "al%")}, []string{"alpha"}},
		{"LIKE suffix", []registry.Clause{c("name", "LIKE", "%ta")}, []string{"beta"}},
		{"LIKE is case-sensitive", []registry.Clause{c("name", "LIKE", "AL%")}, nil},
		{"ILIKE", []registry.Clause{c("name", "ILIKE", "AL%")}, []string{"alpha", "Alpha-2"}},
		{"LIKE _", []registry.Clause{c("name", "LIKE", "gamma_1")}, []string{"gamma_1", "gammax1"}},
		{`LIKE \_`, []registry.Clause{c("name", "LIKE", `gamma\_1`)}, []string{"gamma_1"}},
		{"LIKE %", []registry.Clause{c("name", "LIKE", "50%")}, []string{"50%", "500"}},
		{`LIKE \%`, []registry.Clause{c("name", "LIKE", `50\%`)}, []string{"50%"}},
		{`LIKE \\`, []registry.Clause{c("name", "LIKE", `back\\slash`)}, []string{`back\slash`}},
		{"LIKE quote", []registry.Clause{c("name", "LIKE", "it's")}, []string{"it's"}},
		{"= with %", []registry.Clause{c("name", "=", "50%")}, []string{"50%"}},
		{"= with '", []registry.Clause{c("name", "=", "it's")}, []string{"it's"}},
		{`= with \`, []registry.Clause{c("name", "=", `back\slash`)}, []string{`back\slash`}},
		{`= with "`, []registry.Clause{c("name", "=", `say "hi"`)}, []string{`say "hi"`}},
		{"= injection-looking name", []registry.Clause{c("name", "=", `x' OR '1'='1`)}, []string{`x' OR '1'='1`}},
		{"= injection", []registry.Clause{c("name", "=", `' OR '1'='1`)}, nil},
		{"= injection, drop", []registry.Clause{c("name", "=", `alpha'; DROP TABLE registered_models; --`)}, nil},
		{"LIKE injection", []registry.Clause{c("name", "LIKE", `%' OR 1=1 --`)}, nil},
		{"IN", []registry.Clause{c("name", "IN", "alpha", "beta", "missing")}, []string{"alpha", "beta"}},
		{"IN quoted", []registry.Clause{c("name", "IN", "it's", `back\slash`)}, []string{"it's", `back\slash`}},
		{"tag =", []registry.Clause{c("tags.zone", "=", "DE")}, []string{"alpha"}},
		{"tag = is case-sensitive", []registry.Clause{c("tags.zone", "=", "de")}, nil},
		{"tag LIKE", []registry.Clause{c("tags.zone", "LIKE", "%")}, []string{"alpha", "beta", "50%", "it's", `back\slash`}},
		{"tag = with %", []registry.Clause{c("tags.zone", "=", "50%")}, []string{"50%"}},
		{"tag = with '", []registry.Clause{c("tags.zone", "=", "it's")}, []string{"it's"}},
		{`tag = with \`, []registry.Clause{c("tags.zone", "=", `a\b`)}, []string{`back\slash`}},
		{"tag key with '", []registry.Clause{c("tags.o'k", "=", "1")}, []string{"beta"}},
		{"missing tag", []registry.Clause{c("tags.missing", "=", "x")}, nil},
		{"AND", []registry.Clause{c("name", "LIKE", "%a%"), c("tags.zone", "=", "DE")}, []string{"alpha"}},
		{"AND, disjoint", []registry.Clause{c("name", "=", "alpha"), c("tags.zone", "=", "FR")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			got := e.modelNames(t, registry.Search{Filter: tc.filter, MaxResults: big})
			sameStrings(t, describe(registry.Search{Filter: tc.filter}), sorted(got), sorted(tc.want))
		})
	}
	if got := e.modelNames(t, registry.Search{MaxResults: big}); len(got) != len(all) {
		t.Fatalf("%d models after the searches, want %d", len(got), len(all))
	}
}

func testSearchVersionsFilter(t *testing.T, e *env) {
	versions := []registry.NewVersion{
		{Name: "m1", RunID: "run-a", Source: "s3://b/m1/1", Tags: []registry.Tag{tag("stage", "dev")}},
		{Name: "m1", RunID: "run-b", Source: "s3://b/m1/2", Tags: []registry.Tag{tag("stage", "prod")}},
		{Name: "m1", RunID: `x' OR '1'='1`, Source: "s3://b/50%/it's"},
		{Name: "m1", RunID: "run-deleted", Source: "s3://b/m1/4"},
		{Name: "m2", RunID: "run-a", Source: "s3://b/m2/1", Tags: []registry.Tag{tag("stage", "prod")}},
		{Name: "it's", RunID: "run-c", Source: "s3://b/its/1"},
	}
	for _, name := range []string{"m1", "m2", "it's"} {
		e.createModel(t, name)
	}
	for _, nv := range versions {
		e.createVersion(t, nv)
	}
	e.deleteVersion(t, "m1", 4)
	all := []string{"m1/1", "m1/2", "m1/3", "m2/1", "it's/1"}
	c := clause
	cases := []filterCase{
		{"no filter", nil, all},
		{"name =", []registry.Clause{c("name", "=", "m1")}, []string{"m1/1", "m1/2", "m1/3"}},
		{"name = with '", []registry.Clause{c("name", "=", "it's")}, []string{"it's/1"}},
		{"name !=", []registry.Clause{c("name", "!=", "m1")}, []string{"m2/1", "it's/1"}},
		{"name LIKE", []registry.Clause{c("name", "LIKE", "m%")}, []string{"m1/1", "m1/2", "m1/3", "m2/1"}},
		{"name ILIKE", []registry.Clause{c("name", "ILIKE", "M_")}, []string{"m1/1", "m1/2", "m1/3", "m2/1"}},
		{"name IN", []registry.Clause{c("name", "IN", "m2", "it's")}, []string{"m2/1", "it's/1"}},
		{"run_id =", []registry.Clause{c("run_id", "=", "run-a")}, []string{"m1/1", "m2/1"}},
		{"run_id IN", []registry.Clause{c("run_id", "IN", "run-b", "run-c")}, []string{"m1/2", "it's/1"}},
		{"run_id = injection-looking", []registry.Clause{c("run_id", "=", `x' OR '1'='1`)}, []string{"m1/3"}},
		{"run_id = injection", []registry.Clause{c("run_id", "=", `' OR ''='`)}, nil},
		{"run_id of a deleted version", []registry.Clause{c("run_id", "=", "run-deleted")}, nil},
		{"version_number =", []registry.Clause{c("version_number", "=", "2")}, []string{"m1/2"}},
		{"version_number of a deleted version", []registry.Clause{c("version_number", "=", "4")}, nil},
		{"name and version", []registry.Clause{c("name", "=", "m1"), c("version_number", "=", "1")}, []string{"m1/1"}},
		{"tag =", []registry.Clause{c("tags.stage", "=", "prod")}, []string{"m1/2", "m2/1"}},
		{"tag and name", []registry.Clause{c("tags.stage", "=", "prod"), c("name", "=", "m2")}, []string{"m2/1"}},
		{"source_path =", []registry.Clause{c("source_path", "=", "s3://b/m1/1")}, []string{"m1/1"}},
		{"source_path = with % and '", []registry.Clause{c("source_path", "=", "s3://b/50%/it's")}, []string{"m1/3"}},
		{"source_path LIKE", []registry.Clause{c("source_path", "LIKE", "s3://b/m_/1")}, []string{"m1/1", "m2/1"}},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			got := e.versionKeys(t, registry.Search{Filter: tc.filter, MaxResults: big})
			sameStrings(t, describe(registry.Search{Filter: tc.filter}), sorted(got), sorted(tc.want))
		})
	}
}

type orderCase struct {
	note    string
	orderBy []registry.Order
	want    []string
}

func testSearchModelsOrder(t *testing.T, e *env) {
	// Created: c and a at T1, e at T2, b and d at T3; updated: e at T4, c at T5.
	t1 := e.tick()
	e.createModel(t, "c")
	e.createModel(t, "a")
	e.tick()
	e.createModel(t, "e")
	e.tick()
	e.createModel(t, "b")
	e.createModel(t, "d")
	for _, name := range []string{"e", "c"} {
		e.tick()
		if _, err := e.s.UpdateModel(e.ctx, name, "updated"); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.getModel(t, "a").CreationTime; got != t1 {
		t.Fatalf("a created at %d, want %d", got, t1)
	}
	o := func(key string, desc bool) registry.Order { return registry.Order{Key: key, Desc: desc} }
	cases := []orderCase{
		{"default", nil, []string{"a", "b", "c", "d", "e"}},
		{"name", []registry.Order{o("name", false)}, []string{"a", "b", "c", "d", "e"}},
		{"name desc", []registry.Order{o("name", true)}, []string{"e", "d", "c", "b", "a"}},
		{"creation", []registry.Order{o("creation_timestamp", false)}, []string{"a", "c", "e", "b", "d"}},
		{"creation desc", []registry.Order{o("creation_timestamp", true)}, []string{"b", "d", "e", "a", "c"}},
		{"last updated", []registry.Order{o("last_updated_timestamp", false)}, []string{"a", "b", "d", "e", "c"}},
		{"last updated desc", []registry.Order{o("last_updated_timestamp", true)}, []string{"c", "e", "b", "d", "a"}},
		{"creation desc, name desc", []registry.Order{o("creation_timestamp", true), o("name", true)}, []string{"d", "b", "e", "c", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			checkPages(t, tc, func(s registry.Search) ([]string, bool) {
				s.OrderBy = tc.orderBy
				return e.modelPage(t, s)
			})
		})
	}
}

func testSearchVersionsOrder(t *testing.T, e *env) {
	// Created: m/1 at T1; m/2, m/3, n/1 at T2; m/4 at T3; n/2 at T4.
	// o/1 is deleted. m/1 is updated at T5.
	for _, name := range []string{"m", "n", "o"} {
		e.createModel(t, name)
	}
	e.tick()
	e.newVersion(t, "m")
	e.tick()
	e.newVersion(t, "m")
	e.newVersion(t, "m")
	e.newVersion(t, "n")
	e.tick()
	e.newVersion(t, "m")
	e.tick()
	e.newVersion(t, "n")
	e.newVersion(t, "o")
	e.deleteVersion(t, "o", 1)
	e.tick()
	if _, err := e.s.UpdateVersion(e.ctx, "m", 1, "updated"); err != nil {
		t.Fatal(err)
	}
	o := func(key string, desc bool) registry.Order { return registry.Order{Key: key, Desc: desc} }
	cases := []orderCase{
		{"default", nil, []string{"m/4", "m/3", "m/2", "m/1", "n/2", "n/1"}},
		{"name desc", []registry.Order{o("name", true)}, []string{"n/2", "n/1", "m/4", "m/3", "m/2", "m/1"}},
		{"version", []registry.Order{o("version_number", false)}, []string{"m/1", "n/1", "m/2", "n/2", "m/3", "m/4"}},
		{"version desc", []registry.Order{o("version_number", true)}, []string{"m/4", "m/3", "m/2", "n/2", "m/1", "n/1"}},
		{"creation", []registry.Order{o("creation_timestamp", false)}, []string{"m/1", "m/3", "m/2", "n/1", "m/4", "n/2"}},
		{"creation desc", []registry.Order{o("creation_timestamp", true)}, []string{"n/2", "m/4", "m/3", "m/2", "n/1", "m/1"}},
		{"last updated desc", []registry.Order{o("last_updated_timestamp", true)}, []string{"m/1", "n/2", "m/4", "m/3", "m/2", "n/1"}},
		{"name, version", []registry.Order{o("name", false), o("version_number", false)}, []string{"m/1", "m/2", "m/3", "m/4", "n/1", "n/2"}},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			checkPages(t, tc, func(s registry.Search) ([]string, bool) {
				s.OrderBy = tc.orderBy
				return e.versionPage(t, s)
			})
		})
	}
}

// checkPages reads tc's order whole and in pages of 1, 2 and 4 rows,
// checking the more flag, then past the end.
func checkPages(t *testing.T, tc orderCase, search func(registry.Search) ([]string, bool)) {
	t.Helper()
	n := len(tc.want)
	got, more := search(registry.Search{MaxResults: n})
	sameStrings(t, "one page", got, tc.want)
	if more {
		t.Fatalf("a page holding every row says more rows follow")
	}
	for _, size := range []int{1, 2, 4} {
		var all []string
		for offset := 0; offset < n; offset += size {
			page, more := search(registry.Search{MaxResults: size, Offset: offset})
			if want := offset+size < n; more != want {
				t.Fatalf("page of %d at offset %d: more = %v, want %v", size, offset, more, want)
			}
			all = append(all, page...)
		}
		sameStrings(t, fmt.Sprintf("pages of %d", size), all, tc.want)
	}
	if page, more := search(registry.Search{MaxResults: 2, Offset: n}); len(page) != 0 || more {
		t.Fatalf("page past the end = %v, more %v; want empty", page, more)
	}
}

func testSearchInvalid(t *testing.T, e *env) {
	e.createModel(t, "m")
	e.newVersion(t, "m")
	c := clause
	models := []struct {
		note string
		s    registry.Search
	}{
		{"unknown key", registry.Search{Filter: []registry.Clause{c("bogus", "=", "x")}}},
		{"version key on models", registry.Search{Filter: []registry.Clause{c("run_id", "=", "x")}}},
		{"unknown operator", registry.Search{Filter: []registry.Clause{c("name", "~", "x")}}},
		{"unknown order key", registry.Search{OrderBy: []registry.Order{{Key: "bogus"}}}},
		{"version order key on models", registry.Search{OrderBy: []registry.Order{{Key: "version_number"}}}},
	}
	for _, tc := range models {
		t.Run("models/"+tc.note, func(t *testing.T) {
			tc.s.MaxResults = big
			_, _, err := e.s.SearchModels(e.ctx, tc.s)
			wantErr(t, "SearchModels", err, forecast.EINVALID, "")
		})
	}
	versions := []struct {
		note string
		s    registry.Search
	}{
		{"unknown key", registry.Search{Filter: []registry.Clause{c("bogus", "=", "x")}}},
		{"unknown operator", registry.Search{Filter: []registry.Clause{c("name", "REGEXP", "x")}}},
		{"version_number not a number", registry.Search{Filter: []registry.Clause{c("version_number", "=", "one")}}},
		{"unknown order key", registry.Search{OrderBy: []registry.Order{{Key: "bogus"}}}},
	}
	for _, tc := range versions {
		t.Run("versions/"+tc.note, func(t *testing.T) {
			tc.s.MaxResults = big
			_, _, err := e.s.SearchVersions(e.ctx, tc.s)
			wantErr(t, "SearchVersions", err, forecast.EINVALID, "")
		})
	}
}
