package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

func testCreateGetModel(t *testing.T, e *env) {
	now := e.tick()
	tags := []registry.Tag{tag("zone", "DE"), tag("horizon", "72h"), tag("lookback", "168h")}
	got, err := e.s.CreateModel(e.ctx, "forecaster", "carbon intensity", tags)
	if err != nil {
		t.Fatal(err)
	}
	want := registry.RegisteredModel{
		Name: "forecaster", CreationTime: now, LastUpdatedTime: now, Description: "carbon intensity",
		Tags: []registry.Tag{tag("horizon", "72h"), tag("lookback", "168h"), tag("zone", "DE")},
	}
	sameModel(t, "CreateModel", got, want)
	e.tick()
	sameModel(t, "GetModel", e.getModel(t, "forecaster"), want)

	_, err = e.s.GetModel(e.ctx, "Forecaster")
	wantErr(t, "GetModel is case-sensitive", err, forecast.ENOTFOUND, "")
}

func testCreateModelConflict(t *testing.T, e *env) {
	if _, err := e.s.CreateModel(e.ctx, "m", "first", nil); err != nil {
		t.Fatal(err)
	}
	_, err := e.s.CreateModel(e.ctx, "m", "second", []registry.Tag{tag("k", "v")})
	wantErr(t, "CreateModel twice", err, forecast.ECONFLICT, "")
	got := e.getModel(t, "m")
	if got.Description != "first" || len(got.Tags) != 0 {
		t.Fatalf("the failed CreateModel changed the model: %+v", got)
	}
}

func testCreateModelRace(t *testing.T, e *env) {
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = e.s.CreateModel(e.ctx, "m", "", nil) })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		if err == nil {
			created++
			continue
		}
		wantErr(t, "concurrent CreateModel", err, forecast.ECONFLICT, "")
	}
	if created != 1 {
		t.Fatalf("%d of %d concurrent CreateModel calls succeeded, want 1", created, n)
	}
}

func testModelNames(t *testing.T, e *env) {
	valid := []string{
		"m", "carbon-forecaster-DE", "with space", "it's", `say "hi"`, `back\slash`, "50%_x",
		`x' OR '1'='1`, "modèle", strings.Repeat("n", registry.MaxNameLen),
	}
	for _, name := range valid {
		if got := e.createModel(t, name); got.Name != name {
			t.Fatalf("CreateModel(%q).Name = %q", name, got.Name)
		}
		if got := e.getModel(t, name); got.Name != name {
			t.Fatalf("GetModel(%q).Name = %q", name, got.Name)
		}
	}
	invalid := []struct{ note, name string }{
		{"empty", ""},
		{"slash", "a/b"},
		{"colon", "a:b"},
		{"newline", "a\nb"},
		{"too long", strings.Repeat("n", registry.MaxNameLen+1)},
	}
	for _, tc := range invalid {
		t.Run(tc.note, func(t *testing.T) {
			_, err := e.s.CreateModel(e.ctx, tc.name, "", nil)
			wantErr(t, "CreateModel", err, forecast.EINVALID, "name")
		})
	}
	_, err := e.s.CreateVersion(e.ctx, registry.NewVersion{Name: "", Source: "s3://x"})
	wantErr(t, "CreateVersion without a name", err, forecast.EINVALID, "name")
}

// testNotFound calls every method on a missing model, version and alias.
func testNotFound(t *testing.T, e *env) {
	e.createModel(t, "m")
	e.newVersion(t, "m")
	s, ctx := e.s, e.ctx
	calls := []struct {
		note string
		call func() error
	}{
		{"GetModel", func() error { _, err := s.GetModel(ctx, "x"); return err }},
		{"UpdateModel", func() error { _, err := s.UpdateModel(ctx, "x", "d"); return err }},
		{"DeleteModel", func() error { return s.DeleteModel(ctx, "x") }},
		{"SetModelTag", func() error { return s.SetModelTag(ctx, "x", tag("k", "v")) }},
		{"DeleteModelTag", func() error { return s.DeleteModelTag(ctx, "x", "k") }},
		{"SetAlias/model", func() error { return s.SetAlias(ctx, "x", "champion", 1) }},
		{"SetAlias/version", func() error { return s.SetAlias(ctx, "m", "champion", 2) }},
		{"DeleteAlias/model", func() error { return s.DeleteAlias(ctx, "x", "champion") }},
		{"DeleteAlias/alias", func() error { return s.DeleteAlias(ctx, "m", "champion") }},
		{"VersionByAlias/model", func() error { _, err := s.VersionByAlias(ctx, "x", "champion"); return err }},
		{"VersionByAlias/alias", func() error { _, err := s.VersionByAlias(ctx, "m", "champion"); return err }},
		{"CreateVersion", func() error {
			_, err := s.CreateVersion(ctx, registry.NewVersion{Name: "x", Source: "s3://x"})
			return err
		}},
		{"GetVersion/model", func() error { _, err := s.GetVersion(ctx, "x", 1); return err }},
		{"GetVersion/version", func() error { _, err := s.GetVersion(ctx, "m", 2); return err }},
		{"UpdateVersion/model", func() error { _, err := s.UpdateVersion(ctx, "x", 1, "d"); return err }},
		{"UpdateVersion/version", func() error { _, err := s.UpdateVersion(ctx, "m", 2, "d"); return err }},
		{"TransitionStage/model", func() error {
			_, err := s.TransitionStage(ctx, "x", 1, registry.StageStaging, false)
			return err
		}},
		{"TransitionStage/version", func() error {
			_, err := s.TransitionStage(ctx, "m", 2, registry.StageStaging, false)
			return err
		}},
		{"DeleteVersion/model", func() error { return s.DeleteVersion(ctx, "x", 1) }},
		{"DeleteVersion/version", func() error { return s.DeleteVersion(ctx, "m", 2) }},
		{"LatestVersions", func() error { _, err := s.LatestVersions(ctx, "x", nil); return err }},
		{"SetVersionTag/model", func() error { return s.SetVersionTag(ctx, "x", 1, tag("k", "v")) }},
		{"SetVersionTag/version", func() error { return s.SetVersionTag(ctx, "m", 2, tag("k", "v")) }},
		{"DeleteVersionTag/model", func() error { return s.DeleteVersionTag(ctx, "x", 1, "k") }},
		{"DeleteVersionTag/version", func() error { return s.DeleteVersionTag(ctx, "m", 2, "k") }},
	}
	if !e.opts.NoRename {
		calls = append(calls, struct {
			note string
			call func() error
		}{"RenameModel", func() error { _, err := s.RenameModel(ctx, "x", "y"); return err }})
	}
	for _, tc := range calls {
		t.Run(tc.note, func(t *testing.T) {
			wantErr(t, tc.note, tc.call(), forecast.ENOTFOUND, "")
		})
	}
	if _, err := e.s.GetModel(e.ctx, "y"); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("a failed call created a model: GetModel(y) = %v", err)
	}
}

func testUpdateModel(t *testing.T, e *env) {
	created := e.createModel(t, "m", tag("k", "v"))
	now := e.tick()
	got, err := e.s.UpdateModel(e.ctx, "m", "new description")
	if err != nil {
		t.Fatal(err)
	}
	want := created
	want.Description, want.LastUpdatedTime = "new description", now
	sameModel(t, "UpdateModel", got, want)
	sameModel(t, "GetModel", e.getModel(t, "m"), want)
}

func testDeleteModel(t *testing.T, e *env) {
	e.createModel(t, "m", tag("k", "v"))
	e.createModel(t, "other")
	e.newVersion(t, "m")
	e.newVersion(t, "m")
	e.newVersion(t, "other")
	e.setAlias(t, "m", "champion", 1)
	e.setAlias(t, "other", "champion", 1)
	if err := e.s.SetVersionTag(e.ctx, "m", 2, tag("k", "v")); err != nil {
		t.Fatal(err)
	}
	if err := e.s.DeleteModel(e.ctx, "m"); err != nil {
		t.Fatal(err)
	}

	_, err := e.s.GetModel(e.ctx, "m")
	wantErr(t, "GetModel", err, forecast.ENOTFOUND, "")
	_, err = e.s.GetVersion(e.ctx, "m", 1)
	wantErr(t, "GetVersion", err, forecast.ENOTFOUND, "")
	_, err = e.s.VersionByAlias(e.ctx, "m", "champion")
	wantErr(t, "VersionByAlias", err, forecast.ENOTFOUND, "")
	if got, want := e.aliasTargets(t), []registry.AliasTarget{target("other", "champion", 1)}; !equalTargets(got, want) {
		t.Fatalf("AliasTargets = %v, want %v", got, want)
	}
	sameStrings(t, "SearchModels", e.modelNames(t, registry.Search{MaxResults: big}), []string{"other"})
	sameStrings(t, "SearchVersions", e.versionKeys(t, registry.Search{MaxResults: big}), []string{"other/1"})
	err = e.s.DeleteModel(e.ctx, "m")
	wantErr(t, "DeleteModel twice", err, forecast.ENOTFOUND, "")

	// The name is free again, and the new model starts from scratch.
	m := e.createModel(t, "m")
	if len(m.Tags) != 0 || len(m.Aliases) != 0 {
		t.Fatalf("recreated model kept tags or aliases: %+v", m)
	}
	if v := e.newVersion(t, "m"); v.Version != 1 || len(v.Tags) != 0 {
		t.Fatalf("recreated model's first version is %+v, want version 1 without tags", v)
	}
}

func testRenameModel(t *testing.T, e *env) {
	e.createModel(t, "old", tag("zone", "DE"))
	e.createModel(t, "taken")
	for range 3 {
		e.newVersion(t, "old")
	}
	e.deleteVersion(t, "old", 3)
	e.setAlias(t, "old", "champion", 1)
	e.setAlias(t, "old", "challenger", 2)
	if err := e.s.SetVersionTag(e.ctx, "old", 1, tag("k", "v")); err != nil {
		t.Fatal(err)
	}
	before := e.getModel(t, "old")

	if e.opts.NoRename {
		_, err := e.s.RenameModel(e.ctx, "old", "new")
		wantErr(t, "RenameModel", err, forecast.EINVALID, "")
		sameModel(t, "GetModel after a refused rename", e.getModel(t, "old"), before)
		_, err = e.s.GetModel(e.ctx, "new")
		wantErr(t, "GetModel(new)", err, forecast.ENOTFOUND, "")
		return
	}

	_, err := e.s.RenameModel(e.ctx, "old", "taken")
	wantErr(t, "RenameModel onto an existing model", err, forecast.ECONFLICT, "")
	_, err = e.s.RenameModel(e.ctx, "old", "a/b")
	wantErr(t, "RenameModel to an invalid name", err, forecast.EINVALID, "new_name")
	sameModel(t, "GetModel after failed renames", e.getModel(t, "old"), before)

	got, err := e.s.RenameModel(e.ctx, "old", "new")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "new" || got.CreationTime != before.CreationTime {
		t.Fatalf("RenameModel = %+v", got)
	}
	sameTags(t, "renamed model", got.Tags, before.Tags)
	if want := []registry.Alias{alias("challenger", 2), alias("champion", 1)}; !equalAliases(got.Aliases, want) {
		t.Fatalf("renamed model's aliases = %v, want %v", got.Aliases, want)
	}
	_, err = e.s.GetModel(e.ctx, "old")
	wantErr(t, "GetModel(old)", err, forecast.ENOTFOUND, "")
	_, err = e.s.GetVersion(e.ctx, "old", 1)
	wantErr(t, "GetVersion(old, 1)", err, forecast.ENOTFOUND, "")

	v1 := e.getVersion(t, "new", 1)
	if v1.Name != "new" {
		t.Fatalf("GetVersion(new, 1).Name = %q", v1.Name)
	}
	sameTags(t, "renamed version", v1.Tags, []registry.Tag{tag("k", "v")})
	sameStrings(t, "renamed version's aliases", v1.Aliases, []string{"champion"})
	if v, err := e.s.VersionByAlias(e.ctx, "new", "challenger"); err != nil || v.Version != 2 || v.Name != "new" {
		t.Fatalf("VersionByAlias(new, challenger) = %+v, %v", v, err)
	}
	want := []registry.AliasTarget{target("new", "challenger", 2), target("new", "champion", 1)}
	if got := e.aliasTargets(t); !equalTargets(got, want) {
		t.Fatalf("AliasTargets = %v, want %v", got, want)
	}
	// The soft-deleted version 3 moved too: its number is not reused.
	if v := e.newVersion(t, "new"); v.Version != 4 {
		t.Fatalf("CreateVersion after rename = %d, want 4", v.Version)
	}
	sameStrings(t, "SearchVersions", e.versionKeys(t, registry.Search{MaxResults: big}), []string{"new/4", "new/2", "new/1"})
	_, err = e.s.RenameModel(e.ctx, "old", "x")
	wantErr(t, "RenameModel(old) after rename", err, forecast.ENOTFOUND, "")
}

func testModelTags(t *testing.T, e *env) {
	e.createModel(t, "m")
	for _, tg := range []registry.Tag{tag("zone", "DE"), tag("horizon", "24h"), tag("zone", "FR")} {
		if err := e.s.SetModelTag(e.ctx, "m", tg); err != nil {
			t.Fatalf("SetModelTag(%v): %v", tg, err)
		}
	}
	sameTags(t, "after set and overwrite", e.getModel(t, "m").Tags, []registry.Tag{tag("horizon", "24h"), tag("zone", "FR")})
	if err := e.s.DeleteModelTag(e.ctx, "m", "horizon"); err != nil {
		t.Fatal(err)
	}
	sameTags(t, "after delete", e.getModel(t, "m").Tags, []registry.Tag{tag("zone", "FR")})
	wantNoErrOrNotFound(t, "DeleteModelTag of an unset key", e.s.DeleteModelTag(e.ctx, "m", "absent"))
	sameTags(t, "after deleting an unset key", e.getModel(t, "m").Tags, []registry.Tag{tag("zone", "FR")})

	// Limits are inclusive; values are stored as given.
	edge := []registry.Tag{
		tag(strings.Repeat("k", registry.MaxTagKeyLen), strings.Repeat("v", registry.MaxTagValueLen)),
		tag("quoted", `it's "x" \ 50% _`),
	}
	for _, tg := range edge {
		if err := e.s.SetModelTag(e.ctx, "m", tg); err != nil {
			t.Fatalf("SetModelTag(%.20q...): %v", tg.Key, err)
		}
	}
	sameTags(t, "edge tags", e.getModel(t, "m").Tags, []registry.Tag{edge[0], edge[1], tag("zone", "FR")})

	for _, tc := range invalidTags() {
		t.Run(tc.note, func(t *testing.T) {
			wantErr(t, "SetModelTag", e.s.SetModelTag(e.ctx, "m", tc.tag), forecast.EINVALID, tc.field)
			_, err := e.s.CreateModel(e.ctx, "bad", "", []registry.Tag{tag("ok", "1"), tc.tag})
			wantErr(t, "CreateModel", err, forecast.EINVALID, tc.field)
			_, err = e.s.GetModel(e.ctx, "bad")
			wantErr(t, "GetModel after a refused CreateModel", err, forecast.ENOTFOUND, "")
		})
	}
	wantErr(t, "DeleteModelTag with an empty key", e.s.DeleteModelTag(e.ctx, "m", ""), forecast.EINVALID, "key")
}

type invalidTag struct {
	note  string
	tag   registry.Tag
	field string
}

func invalidTags() []invalidTag {
	return []invalidTag{
		{"empty key", tag("", "v"), "key"},
		{"long key", tag(strings.Repeat("k", registry.MaxTagKeyLen+1), "v"), "key"},
		{"long value", tag("k", strings.Repeat("v", registry.MaxTagValueLen+1)), "value"},
	}
}

// testSortedSlices checks the documented order of Tags, Aliases and
// AliasTargets whatever the order of the writes.
func testSortedSlices(t *testing.T, e *env) {
	wantTags := []registry.Tag{tag("alpha", "1"), tag("mu", "2"), tag("zeta", "3")}
	m := e.createModel(t, "m", tag("zeta", "3"), tag("alpha", "1"), tag("mu", "2"))
	sameTags(t, "CreateModel", m.Tags, wantTags)
	v := e.createVersion(t, registry.NewVersion{Name: "m", Source: "s3://m/1", Tags: []registry.Tag{tag("zeta", "3"), tag("alpha", "1"), tag("mu", "2")}})
	sameTags(t, "CreateVersion", v.Tags, wantTags)
	e.newVersion(t, "m")
	e.createModel(t, "b")
	e.createModel(t, "a")
	e.newVersion(t, "b")
	e.newVersion(t, "a")
	for _, a := range []registry.AliasTarget{
		target("m", "zulu", 1), target("m", "alpha", 1), target("m", "mike", 2),
		target("b", "prod", 1), target("a", "prod", 1), target("a", "canary", 1),
	} {
		e.setAlias(t, a.Name, a.Alias, a.Version)
	}

	got := e.getModel(t, "m")
	sameTags(t, "GetModel", got.Tags, wantTags)
	if want := []registry.Alias{alias("alpha", 1), alias("mike", 2), alias("zulu", 1)}; !equalAliases(got.Aliases, want) {
		t.Fatalf("GetModel aliases = %v, want %v", got.Aliases, want)
	}
	sameTags(t, "GetVersion", e.getVersion(t, "m", 1).Tags, wantTags)
	sameStrings(t, "GetVersion aliases", e.getVersion(t, "m", 1).Aliases, []string{"alpha", "zulu"})
	byAlias, err := e.s.VersionByAlias(e.ctx, "m", "zulu")
	if err != nil {
		t.Fatal(err)
	}
	sameStrings(t, "VersionByAlias aliases", byAlias.Aliases, []string{"alpha", "zulu"})

	models, _, err := e.s.SearchModels(e.ctx, registry.Search{Filter: []registry.Clause{clause("name", "=", "m")}, MaxResults: big})
	if err != nil || len(models) != 1 {
		t.Fatalf("SearchModels(name = m) = %v, %v", models, err)
	}
	sameModel(t, "SearchModels row", models[0], got)
	versions, _, err := e.s.SearchVersions(e.ctx, registry.Search{Filter: []registry.Clause{clause("name", "=", "m"), clause("version_number", "=", "1")}, MaxResults: big})
	if err != nil || len(versions) != 1 {
		t.Fatalf("SearchVersions(m/1) = %v, %v", versions, err)
	}
	sameVersion(t, "SearchVersions row", versions[0], e.getVersion(t, "m", 1))

	want := []registry.AliasTarget{
		target("a", "canary", 1), target("a", "prod", 1), target("b", "prod", 1),
		target("m", "alpha", 1), target("m", "mike", 2), target("m", "zulu", 1),
	}
	if got := e.aliasTargets(t); !equalTargets(got, want) {
		t.Fatalf("AliasTargets = %v, want %v", got, want)
	}
}

// testSlicesNotShared checks that callers own the slices they pass and get.
func testSlicesNotShared(t *testing.T, e *env) {
	in := []registry.Tag{tag("k", "v")}
	m := e.createModel(t, "m", in...)
	in[0].Value = "changed by the caller"
	m.Tags[0].Value = "changed by the caller"
	sameTags(t, "GetModel", e.getModel(t, "m").Tags, []registry.Tag{tag("k", "v")})

	vin := []registry.Tag{tag("k", "v")}
	v := e.createVersion(t, registry.NewVersion{Name: "m", Source: "s3://m/1", Tags: vin})
	vin[0].Value = "changed by the caller"
	v.Tags[0].Value = "changed by the caller"
	e.setAlias(t, "m", "champion", 1)
	got := e.getVersion(t, "m", 1)
	sameTags(t, "GetVersion", got.Tags, []registry.Tag{tag("k", "v")})
	got.Aliases[0] = "changed"
	sameStrings(t, "GetVersion aliases", e.getVersion(t, "m", 1).Aliases, []string{"champion"})
	targets := e.aliasTargets(t)
	targets[0].Version = 99
	if got := e.aliasTargets(t); got[0].Version != 1 {
		t.Fatalf("AliasTargets shares its slice: %v", got)
	}
}

func testContextCanceled(t *testing.T, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.s.CreateModel(ctx, "m", "", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateModel with a canceled context: %v, want context.Canceled in the chain", err)
	}
	_, err = e.s.GetModel(ctx, "m")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("GetModel with a canceled context: %v, want context.Canceled in the chain", err)
	}
	_, err = e.s.GetModel(e.ctx, "m")
	wantErr(t, "GetModel after a canceled CreateModel", err, forecast.ENOTFOUND, "")
}

func equalAliases(got, want []registry.Alias) bool {
	return len(got) == 0 && len(want) == 0 || slices.Equal(got, want)
}

func equalTargets(got, want []registry.AliasTarget) bool {
	return len(got) == 0 && len(want) == 0 || slices.Equal(got, want)
}
