package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

func testCreateGetVersion(t *testing.T, e *env) {
	created := e.createModel(t, "m")
	now := e.tick()
	got, err := e.s.CreateVersion(e.ctx, registry.NewVersion{
		Name: "m", Source: "s3://bucket/m/1", RunID: "run-1", RunLink: "http://mlflow/runs/run-1",
		Description: "first", UserID: "alice",
		Tags: []registry.Tag{tag("zone", "DE"), tag("signal", "lifecycle")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := registry.ModelVersion{
		Name: "m", Version: 1, CreationTime: now, LastUpdatedTime: now, Description: "first",
		UserID: "alice", CurrentStage: registry.StageNone, Source: "s3://bucket/m/1", RunID: "run-1",
		RunLink: "http://mlflow/runs/run-1", Status: registry.StatusReady,
		Tags: []registry.Tag{tag("signal", "lifecycle"), tag("zone", "DE")},
	}
	sameVersion(t, "CreateVersion", got, want)
	e.tick()
	sameVersion(t, "GetVersion", e.getVersion(t, "m", 1), want)

	m := e.getModel(t, "m")
	if m.LastUpdatedTime != now || m.CreationTime != created.CreationTime {
		t.Fatalf("model times after CreateVersion = %d/%d, want %d/%d", m.CreationTime, m.LastUpdatedTime, created.CreationTime, now)
	}

	pending := e.createVersion(t, registry.NewVersion{Name: "m", Source: "s3://bucket/m/2", Status: registry.StatusPending})
	if pending.Version != 2 || pending.Status != registry.StatusPending {
		t.Fatalf("CreateVersion(PENDING_REGISTRATION) = %+v", pending)
	}
	for _, tc := range invalidTags() {
		t.Run(tc.note, func(t *testing.T) {
			_, err := e.s.CreateVersion(e.ctx, registry.NewVersion{Name: "m", Source: "s3://x", Tags: []registry.Tag{tc.tag}})
			wantErr(t, "CreateVersion", err, forecast.EINVALID, tc.field)
		})
	}
	if v := e.newVersion(t, "m"); v.Version != 3 {
		t.Fatalf("refused CreateVersion calls used version numbers: next is %d, want 3", v.Version)
	}
}

func testVersionSequence(t *testing.T, e *env) {
	e.createModel(t, "a")
	e.createModel(t, "b")
	for want := int64(1); want <= 5; want++ {
		if v := e.newVersion(t, "a"); v.Version != want {
			t.Fatalf("version %d of a is numbered %d", want, v.Version)
		}
	}
	if v := e.newVersion(t, "b"); v.Version != 1 {
		t.Fatalf("first version of b is %d, want 1 (numbers are per model)", v.Version)
	}
}

func testVersionRace(t *testing.T, e *env) {
	const n = 50
	e.createModel(t, "m")
	got := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := e.s.CreateVersion(e.ctx, registry.NewVersion{Name: "m", Source: "s3://m", RunID: fmt.Sprint("run-", i)})
			got[i], errs[i] = v.Version, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("CreateVersion %d: %v", i, err)
		}
	}
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+1) {
			t.Fatalf("%d concurrent CreateVersion calls returned versions %v, want 1..%d", n, got, n)
		}
	}
	page, more, err := e.s.SearchVersions(e.ctx, registry.Search{MaxResults: big})
	if err != nil || more || len(page) != n {
		t.Fatalf("SearchVersions = %d rows, more %v, %v; want %d rows", len(page), more, err, n)
	}
	runs := map[string]int64{}
	for _, v := range page {
		runs[v.RunID] = v.Version
	}
	if len(runs) != n {
		t.Fatalf("%d distinct run ids among %d versions: versions were overwritten", len(runs), n)
	}
}

func testUpdateVersion(t *testing.T, e *env) {
	e.createModel(t, "m")
	created := e.newVersion(t, "m")
	now := e.tick()
	got, err := e.s.UpdateVersion(e.ctx, "m", 1, "new description")
	if err != nil {
		t.Fatal(err)
	}
	want := created
	want.Description, want.LastUpdatedTime = "new description", now
	sameVersion(t, "UpdateVersion", got, want)
	sameVersion(t, "GetVersion", e.getVersion(t, "m", 1), want)
}

func testDeleteVersion(t *testing.T, e *env) {
	e.createModel(t, "m")
	for i := 1; i <= 3; i++ {
		e.createVersion(t, registry.NewVersion{Name: "m", Source: "s3://m", RunID: fmt.Sprint("run-", i)})
	}
	e.setAlias(t, "m", "champion", 3)
	e.setAlias(t, "m", "challenger", 2)
	if err := e.s.SetVersionTag(e.ctx, "m", 3, tag("k", "v")); err != nil {
		t.Fatal(err)
	}
	e.deleteVersion(t, "m", 3)

	_, err := e.s.GetVersion(e.ctx, "m", 3)
	wantErr(t, "GetVersion of a deleted version", err, forecast.ENOTFOUND, "")
	_, err = e.s.VersionByAlias(e.ctx, "m", "champion")
	wantErr(t, "VersionByAlias of a deleted version's alias", err, forecast.ENOTFOUND, "")
	if v, err := e.s.VersionByAlias(e.ctx, "m", "challenger"); err != nil || v.Version != 2 {
		t.Fatalf("VersionByAlias(challenger) = %+v, %v; want version 2", v, err)
	}
	if got, want := e.getModel(t, "m").Aliases, []registry.Alias{alias("challenger", 2)}; !equalAliases(got, want) {
		t.Fatalf("model aliases = %v, want %v", got, want)
	}
	if got, want := e.aliasTargets(t), []registry.AliasTarget{target("m", "challenger", 2)}; !equalTargets(got, want) {
		t.Fatalf("AliasTargets = %v, want %v", got, want)
	}

	deleted := []struct {
		note string
		call func() error
	}{
		{"DeleteVersion", func() error { return e.s.DeleteVersion(e.ctx, "m", 3) }},
		{"UpdateVersion", func() error { _, err := e.s.UpdateVersion(e.ctx, "m", 3, "d"); return err }},
		{"TransitionStage", func() error {
			_, err := e.s.TransitionStage(e.ctx, "m", 3, registry.StageProduction, false)
			return err
		}},
		{"SetVersionTag", func() error { return e.s.SetVersionTag(e.ctx, "m", 3, tag("k", "v")) }},
		{"DeleteVersionTag", func() error { return e.s.DeleteVersionTag(e.ctx, "m", 3, "k") }},
		{"SetAlias", func() error { return e.s.SetAlias(e.ctx, "m", "champion", 3) }},
	}
	for _, tc := range deleted {
		t.Run(tc.note, func(t *testing.T) {
			wantErr(t, tc.note+" on a deleted version", tc.call(), forecast.ENOTFOUND, "")
		})
	}

	sameStrings(t, "SearchVersions", e.versionKeys(t, registry.Search{MaxResults: big}), []string{"m/2", "m/1"})
	run3 := registry.Search{Filter: []registry.Clause{clause("run_id", "=", "run-3")}, MaxResults: big}
	sameStrings(t, "SearchVersions(run_id = run-3)", e.versionKeys(t, run3), nil)
	latest, err := e.s.LatestVersions(e.ctx, "m", nil)
	if err != nil || len(latest) != 1 || latest[0].Version != 2 {
		t.Fatalf("LatestVersions = %v, %v; want version 2 only", latest, err)
	}

	if v := e.newVersion(t, "m"); v.Version != 4 {
		t.Fatalf("CreateVersion after deleting version 3 = %d, want 4 (numbers are never reused)", v.Version)
	}
	for _, v := range []int64{1, 2, 4} {
		e.deleteVersion(t, "m", v)
	}
	if v := e.newVersion(t, "m"); v.Version != 5 {
		t.Fatalf("CreateVersion after deleting every version = %d, want 5", v.Version)
	}
}

func testTransitionStage(t *testing.T, e *env) {
	const (
		none = registry.StageNone
		stag = registry.StageStaging
		prod = registry.StageProduction
		arch = registry.StageArchived
	)
	// Every case starts from versions 1..4 in Production, Staging, None, None.
	initial := []string{prod, stag, none, none}
	cases := []struct {
		note    string
		version int64
		stage   string
		archive bool
		want    []string // stages of versions 1..4 afterwards
		// orInvalid: EINVALID with nothing changed is accepted too (MLflow
		// refuses to archive others for None and Archived).
		orInvalid bool
	}{
		{"production, keep others", 3, "Production", false, []string{prod, stag, prod, none}, false},
		{"production, archive others", 3, "Production", true, []string{arch, stag, prod, none}, false},
		{"staging, archive others", 4, "Staging", true, []string{prod, arch, none, stag}, false},
		{"lower case", 4, "production", false, []string{prod, stag, none, prod}, false},
		{"same stage, archive others", 1, "Production", true, []string{prod, stag, none, none}, false},
		{"archived", 1, "Archived", false, []string{arch, stag, none, none}, false},
		{"none", 2, "None", false, []string{prod, none, none, none}, false},
		{"archived, archive others", 2, "Archived", true, []string{prod, arch, none, none}, true},
		{"none, archive others", 1, "None", true, []string{none, stag, none, none}, true},
	}
	for i, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			name := fmt.Sprint("m", i)
			e.createModel(t, name)
			for v, stage := range initial {
				e.newVersion(t, name)
				if stage != none {
					e.transition(t, name, int64(v+1), stage)
				}
			}
			now := e.tick()
			got, err := e.s.TransitionStage(e.ctx, name, tc.version, tc.stage, tc.archive)
			want := tc.want
			switch {
			case err != nil && tc.orInvalid:
				wantErr(t, "TransitionStage", err, forecast.EINVALID, "")
				want = initial
			case err != nil:
				t.Fatal(err)
			default:
				if got.CurrentStage != tc.want[tc.version-1] || got.LastUpdatedTime != now || got.Version != tc.version {
					t.Fatalf("TransitionStage = %+v, want stage %s at %d", got, tc.want[tc.version-1], now)
				}
			}
			sameStrings(t, "stages afterwards", e.stages(t, name, 4), want)
		})
	}

	t.Run("invalid", func(t *testing.T) {
		e.createModel(t, "bad")
		e.newVersion(t, "bad")
		for _, stage := range []string{"", "prod", registry.StageDeleted} {
			_, err := e.s.TransitionStage(e.ctx, "bad", 1, stage, false)
			wantErr(t, fmt.Sprintf("TransitionStage(%q)", stage), err, forecast.EINVALID, "stage")
		}
		sameStrings(t, "stage", e.stages(t, "bad", 1), []string{none})
	})
}

// stages returns the stages of versions 1..n of name.
func (e *env) stages(t testing.TB, name string, n int64) []string {
	t.Helper()
	var out []string
	for v := int64(1); v <= n; v++ {
		out = append(out, e.getVersion(t, name, v).CurrentStage)
	}
	return out
}

func testLatestVersions(t *testing.T, e *env) {
	e.createModel(t, "m")
	for v, stage := range []string{"Production", "Staging", "Production", "None", "Production", "Archived"} {
		e.newVersion(t, "m")
		if stage != registry.StageNone {
			e.transition(t, "m", int64(v+1), stage)
		}
	}
	e.deleteVersion(t, "m", 5)
	e.createModel(t, "empty")
	e.createModel(t, "only-none")
	e.newVersion(t, "only-none")

	cases := []struct {
		note   string
		name   string
		stages []string
		want   []string // "version stage"
	}{
		{"all stages", "m", nil, []string{"4 None", "2 Staging", "3 Production", "6 Archived"}},
		{"given order, any case", "m", []string{"production", "None"}, []string{"3 Production", "4 None"}},
		{"one stage", "m", []string{"Archived"}, []string{"6 Archived"}},
		{"no versions", "empty", nil, nil},
		{"no version in stage", "only-none", []string{"Production"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			got, err := e.s.LatestVersions(e.ctx, tc.name, tc.stages)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, v := range got {
				if v.Name != tc.name {
					t.Fatalf("LatestVersions returned a version of %q", v.Name)
				}
				keys = append(keys, fmt.Sprint(v.Version, " ", v.CurrentStage))
			}
			sameStrings(t, "LatestVersions", keys, tc.want)
		})
	}
	_, err := e.s.LatestVersions(e.ctx, "m", []string{"Production", "prod"})
	wantErr(t, "LatestVersions with an invalid stage", err, forecast.EINVALID, "stage")
}

func testVersionTags(t *testing.T, e *env) {
	e.createModel(t, "m")
	e.newVersion(t, "m")
	e.newVersion(t, "m")
	for _, tg := range []registry.Tag{tag("zone", "DE"), tag("mae", "12.5"), tag("zone", "FR")} {
		if err := e.s.SetVersionTag(e.ctx, "m", 1, tg); err != nil {
			t.Fatalf("SetVersionTag(%v): %v", tg, err)
		}
	}
	sameTags(t, "after set and overwrite", e.getVersion(t, "m", 1).Tags, []registry.Tag{tag("mae", "12.5"), tag("zone", "FR")})
	sameTags(t, "other version", e.getVersion(t, "m", 2).Tags, nil)
	if err := e.s.DeleteVersionTag(e.ctx, "m", 1, "mae"); err != nil {
		t.Fatal(err)
	}
	sameTags(t, "after delete", e.getVersion(t, "m", 1).Tags, []registry.Tag{tag("zone", "FR")})
	wantNoErrOrNotFound(t, "DeleteVersionTag of an unset key", e.s.DeleteVersionTag(e.ctx, "m", 1, "absent"))
	sameTags(t, "after deleting an unset key", e.getVersion(t, "m", 1).Tags, []registry.Tag{tag("zone", "FR")})
	for _, tc := range invalidTags() {
		t.Run(tc.note, func(t *testing.T) {
			wantErr(t, "SetVersionTag", e.s.SetVersionTag(e.ctx, "m", 1, tc.tag), forecast.EINVALID, tc.field)
		})
	}
	wantErr(t, "DeleteVersionTag with an empty key", e.s.DeleteVersionTag(e.ctx, "m", 1, ""), forecast.EINVALID, "key")
	sameTags(t, "after refused writes", e.getVersion(t, "m", 1).Tags, []registry.Tag{tag("zone", "FR")})
}

// testTextLimits checks MLflow's limits on description, source and
// run_link (registry.MaxDescriptionLen, MaxSourceLen, MaxRunLinkLen):
// values at the limit, in characters, are stored as given; one character
// more is EINVALID naming the field and changes nothing.
func testTextLimits(t *testing.T, e *env) {
	desc := strings.Repeat("é", registry.MaxDescriptionLen) // 2 bytes a character
	m, err := e.s.CreateModel(e.ctx, "m", desc, nil)
	if err != nil || m.Description != desc {
		t.Fatalf("CreateModel with a description at the limit: %.40q, %v", m.Description, err)
	}
	edge := registry.NewVersion{
		Name: "m", Description: desc,
		Source:  "s3://models/" + strings.Repeat("s", registry.MaxSourceLen-len("s3://models/")),
		RunLink: "http://runs/" + strings.Repeat("r", registry.MaxRunLinkLen-len("http://runs/")),
	}
	v := e.createVersion(t, edge)
	if got := e.getVersion(t, "m", v.Version); got.Description != desc || got.Source != edge.Source || got.RunLink != edge.RunLink {
		t.Fatalf("version at the limits not stored as given: %.40q %.40q %.40q", got.Description, got.Source, got.RunLink)
	}

	long := strings.Repeat("d", registry.MaxDescriptionLen+1)
	_, err = e.s.CreateModel(e.ctx, "long", long, nil)
	wantErr(t, "CreateModel with a long description", err, forecast.EINVALID, "description")
	_, err = e.s.GetModel(e.ctx, "long")
	wantErr(t, "GetModel after a refused CreateModel", err, forecast.ENOTFOUND, "")
	_, err = e.s.UpdateModel(e.ctx, "m", long)
	wantErr(t, "UpdateModel with a long description", err, forecast.EINVALID, "description")
	_, err = e.s.UpdateVersion(e.ctx, "m", v.Version, long)
	wantErr(t, "UpdateVersion with a long description", err, forecast.EINVALID, "description")

	for _, tc := range []struct {
		note, field string
		nv          registry.NewVersion
	}{
		{"long description", "description", registry.NewVersion{Name: "m", Source: "s3://m", Description: long}},
		{"long source", "source", registry.NewVersion{Name: "m", Source: edge.Source + "s"}},
		{"long run_link", "run_link", registry.NewVersion{Name: "m", Source: "s3://m", RunLink: edge.RunLink + "r"}},
	} {
		_, err := e.s.CreateVersion(e.ctx, tc.nv)
		wantErr(t, "CreateVersion with a "+tc.note, err, forecast.EINVALID, tc.field)
	}
	if got := e.getModel(t, "m"); got.Description != desc {
		t.Fatalf("refused updates changed the model's description to %.40q", got.Description)
	}
	if got := e.getVersion(t, "m", v.Version); got.Description != desc {
		t.Fatalf("a refused update changed the version's description to %.40q", got.Description)
	}
	if next := e.newVersion(t, "m"); next.Version != v.Version+1 {
		t.Fatalf("after refused creates the next version is %d, want %d", next.Version, v.Version+1)
	}
}
