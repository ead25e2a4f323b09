//go:build interop

package mlflowclient_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowclient"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustModel(t *testing.T, c *mlflowclient.Client, name string, tags ...registry.Tag) {
	t.Helper()
	if _, err := c.CreateModel(ctxFor(t), name, "", tags); err != nil {
		t.Fatalf("CreateModel(%q): %v", name, err)
	}
}

func mustVersion(t *testing.T, c *mlflowclient.Client, name string) registry.ModelVersion {
	t.Helper()
	v, err := c.CreateVersion(ctxFor(t), registry.NewVersion{Name: name, Source: "s3://bucket/" + name + "/model"})
	if err != nil {
		t.Fatalf("CreateVersion(%q): %v", name, err)
	}
	return v
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := forecast.ErrorCode(err); got != code {
		t.Fatalf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}

// testDivergences pins what MLflow does where the registry.Store contract
// (and storetest) says otherwise; a failure here means MLflow changed.
func testDivergences(t *testing.T, c *mlflowclient.Client) {
	ctx := ctxFor(t)
	mustModel(t, c, "m")
	mustVersion(t, c, "m")
	mustVersion(t, c, "m")
	mustModel(t, c, "n")
	mustVersion(t, c, "n")
	if err := c.SetAlias(ctx, "m", "champion", 1); err != nil {
		t.Fatal(err)
	}

	t.Run("DeleteAlias of a missing alias succeeds", func(t *testing.T) {
		if err := c.DeleteAlias(ctx, "m", "missing"); err != nil {
			t.Fatalf("DeleteAlias = %v, MLflow used to answer nothing", err)
		}
	})
	t.Run("search rows have no aliases", func(t *testing.T) {
		page, _, err := c.SearchVersions(ctx, registry.Search{Filter: []registry.Clause{{Key: "name", Op: "=", Values: []string{"m"}}}, MaxResults: 10})
		if err != nil || len(page) != 2 {
			t.Fatalf("SearchVersions = %v, %v", page, err)
		}
		for _, v := range page {
			if len(v.Aliases) != 0 {
				t.Fatalf("version %d has aliases %v in a search row", v.Version, v.Aliases)
			}
		}
		if v, err := c.GetVersion(ctx, "m", 1); err != nil || !slices.Equal(v.Aliases, []string{"champion"}) {
			t.Fatalf("GetVersion(m, 1) = %+v, %v; want alias champion", v, err)
		}
	})
	t.Run("sources need a path", func(t *testing.T) {
		_, err := c.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://m"})
		wantCode(t, "CreateVersion(s3://m)", err, forecast.EINVALID)
		_, err = c.CreateVersion(ctx, registry.NewVersion{Name: "missing", Source: "s3://m"})
		wantCode(t, "CreateVersion(missing model, s3://m)", err, forecast.EINVALID)
	})
	t.Run("tag keys are restricted", func(t *testing.T) {
		wantCode(t, "SetModelTag(o'k)", c.SetModelTag(ctx, "m", registry.Tag{Key: "o'k", Value: "1"}), forecast.EINVALID)
		if err := c.SetModelTag(ctx, "m", registry.Tag{Key: "a-b.c d:e/f", Value: "1"}); err != nil {
			t.Fatalf("SetModelTag of a key with every allowed punctuation: %v", err)
		}
	})
	t.Run("no creation_timestamp order for models", func(t *testing.T) {
		_, _, err := c.SearchModels(ctx, registry.Search{OrderBy: []registry.Order{{Key: "creation_timestamp"}}, MaxResults: 10})
		wantCode(t, "SearchModels(order by creation_timestamp)", err, forecast.EINVALID)
	})
	t.Run("versions default to last updated first", func(t *testing.T) {
		if _, err := c.UpdateVersion(ctx, "m", 1, "touched"); err != nil {
			t.Fatal(err)
		}
		page, _, err := c.SearchVersions(ctx, registry.Search{MaxResults: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := keys(page), []string{"m/1", "n/1", "m/2"}; !slices.Equal(got, want) {
			t.Fatalf("default order %v, want %v (last_updated_timestamp DESC)", got, want)
		}
	})
}

func keys(vs []registry.ModelVersion) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprint(v.Name, "/", v.Version))
	}
	return out
}

func names(ms []registry.RegisteredModel) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// testFilters checks that FormatFilter's quoting reads back verbatim on
// MLflow: the model-search cases storetest cannot run (its setup uses a tag
// key MLflow refuses), quotes, backslashes, LIKE escapes and tag keys that
// need backticks.
func testFilters(t *testing.T, c *mlflowclient.Client) {
	all := []string{"alpha", "Alpha-2", "it's", `say "hi"`, `back\slash`, "50%", "500", `x' OR '1'='1`, "gamma_1", "gammax1"}
	for _, n := range all {
		mustModel(t, c, n)
	}
	ctx := ctxFor(t)
	tags := map[string][]registry.Tag{
		"alpha": {{Key: "zone", Value: "DE"}, {Key: "my key", Value: "spaced"}, {Key: "a.b", Value: "dotted"}},
		"it's":  {{Key: "zone", Value: "it's"}},
		"50%":   {{Key: "zone", Value: `a\b`}},
	}
	for name, ts := range tags {
		for _, tg := range ts {
			if err := c.SetModelTag(ctx, name, tg); err != nil {
				t.Fatal(err)
			}
		}
	}
	c1 := func(key, op string, values ...string) []registry.Clause {
		return []registry.Clause{{Key: key, Op: op, Values: values}}
	}
	cases := []struct {
		note   string
		filter []registry.Clause
		want   []string
	}{
		{"=", c1("name", "=", "alpha"), []string{"alpha"}},
		{"= with '", c1("name", "=", "it's"), []string{"it's"}},
		{`= with "`, c1("name", "=", `say "hi"`), []string{`say "hi"`}},
		{`= with \`, c1("name", "=", `back\slash`), []string{`back\slash`}},
		{"= injection-looking", c1("name", "=", `x' OR '1'='1`), []string{`x' OR '1'='1`}},
		{"= injection", c1("name", "=", `' OR '1'='1`), nil},
		{"!=", c1("name", "!=", "alpha"), all[1:]},
		{"LIKE", c1("name", "LIKE", "al%"), []string{"alpha"}},
		{"ILIKE", c1("name", "ILIKE", "AL%"), []string{"alpha", "Alpha-2"}},
		{"LIKE _", c1("name", "LIKE", "gamma_1"), []string{"gamma_1", "gammax1"}},
		{`LIKE \_`, c1("name", "LIKE", `gamma\_1`), []string{"gamma_1"}},
		{`LIKE \%`, c1("name", "LIKE", `50\%`), []string{"50%"}},
		{`LIKE \\`, c1("name", "LIKE", `back\\slash`), []string{`back\slash`}},
		{"LIKE '", c1("name", "LIKE", "it's"), []string{"it's"}},
		{"tag =", c1("tags.zone", "=", "DE"), []string{"alpha"}},
		{"tag = with '", c1("tags.zone", "=", "it's"), []string{"it's"}},
		{`tag = with \`, c1("tags.zone", "=", `a\b`), []string{"50%"}},
		{"tag key with a space", c1("tags.my key", "=", "spaced"), []string{"alpha"}},
		{"dotted tag key", c1("tags.a.b", "=", "dotted"), []string{"alpha"}},
		{"AND", []registry.Clause{{Key: "name", Op: "LIKE", Values: []string{"%a%"}}, {Key: "tags.zone", Op: "=", Values: []string{"DE"}}}, []string{"alpha"}},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			page, _, err := c.SearchModels(ctx, registry.Search{Filter: tc.filter, MaxResults: 100})
			if err != nil {
				t.Fatalf("SearchModels(%v): %v", tc.filter, err)
			}
			got, want := names(page), slices.Clone(tc.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("SearchModels(%v) = %q, want %q", tc.filter, got, want)
			}
		})
	}
	_, _, err := c.SearchModels(ctx, registry.Search{Filter: c1("name", "=", `it's "x"`), MaxResults: 10})
	wantCode(t, "a value with both quotes", err, forecast.EINVALID)
}

// testPages checks order_by, page tokens and the more flag on orders
// whose keys are distinct (storetest's order cases rely on equal
// timestamps a real server does not give).
func testPages(t *testing.T, c *mlflowclient.Client) {
	ctx := ctxFor(t)
	for _, n := range []string{"c", "a", "e", "b", "d"} {
		mustModel(t, c, n)
		mustVersion(t, c, n)
	}
	mustVersion(t, c, "a")
	for _, n := range []string{"d", "a", "c"} {
		time.Sleep(5 * time.Millisecond) // distinct server timestamps
		if _, err := c.UpdateModel(ctx, n, "updated"); err != nil {
			t.Fatal(err)
		}
	}
	o := func(key string, desc bool) []registry.Order { return []registry.Order{{Key: key, Desc: desc}} }
	modelCases := []struct {
		note  string
		order []registry.Order
		want  []string
	}{
		{"default", nil, []string{"a", "b", "c", "d", "e"}},
		{"name desc", o("name", true), []string{"e", "d", "c", "b", "a"}},
		{"last updated desc", o("last_updated_timestamp", true), []string{"c", "a", "d", "b", "e"}},
		{"timestamp", o("timestamp", false), []string{"e", "b", "d", "a", "c"}},
	}
	for _, tc := range modelCases {
		t.Run("models/"+tc.note, func(t *testing.T) {
			pages(t, tc.want, func(s registry.Search) ([]string, bool, error) {
				s.OrderBy = tc.order
				ms, more, err := c.SearchModels(ctx, s)
				return names(ms), more, err
			})
		})
	}
	versionCases := []struct {
		note  string
		order []registry.Order
		want  []string
	}{
		{"name, version", []registry.Order{{Key: "name"}, {Key: "version_number"}}, []string{"a/1", "a/2", "b/1", "c/1", "d/1", "e/1"}},
		{"creation desc", o("creation_timestamp", true), []string{"a/2", "d/1", "b/1", "e/1", "a/1", "c/1"}},
	}
	for _, tc := range versionCases {
		t.Run("versions/"+tc.note, func(t *testing.T) {
			pages(t, tc.want, func(s registry.Search) ([]string, bool, error) {
				s.OrderBy = tc.order
				vs, more, err := c.SearchVersions(ctx, s)
				return keys(vs), more, err
			})
		})
	}
}

// pages reads want whole and in pages of 2, checking the more flag.
func pages(t *testing.T, want []string, search func(registry.Search) ([]string, bool, error)) {
	t.Helper()
	got, more, err := search(registry.Search{MaxResults: 100})
	if err != nil || more || !slices.Equal(got, want) {
		t.Fatalf("one page = %q, more %v, %v; want %q", got, more, err, want)
	}
	var all []string
	for off := 0; off < len(want); off += 2 {
		page, more, err := search(registry.Search{MaxResults: 2, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		if w := off+2 < len(want); more != w {
			t.Fatalf("page at offset %d: more = %v, want %v", off, more, w)
		}
		all = append(all, page...)
	}
	if !slices.Equal(all, want) {
		t.Fatalf("pages of 2 = %q, want %q", all, want)
	}
}
