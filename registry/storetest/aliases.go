package storetest

import (
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

func testAliases(t *testing.T, e *env) {
	e.createModel(t, "m")
	e.newVersion(t, "m")
	e.newVersion(t, "m")
	e.newVersion(t, "m")
	e.deleteVersion(t, "m", 3)
	before := e.getModel(t, "m")
	e.tick()

	e.setAlias(t, "m", "champion", 1)
	if got := e.getModel(t, "m").LastUpdatedTime; got != before.LastUpdatedTime {
		t.Fatalf("SetAlias changed the model's last_updated_time from %d to %d", before.LastUpdatedTime, got)
	}
	v, err := e.s.VersionByAlias(e.ctx, "m", "champion")
	if err != nil {
		t.Fatal(err)
	}
	sameVersion(t, "VersionByAlias", v, e.getVersion(t, "m", 1))
	sameStrings(t, "VersionByAlias aliases", v.Aliases, []string{"champion"})

	// Setting it again moves it.
	e.setAlias(t, "m", "champion", 2)
	if v, err := e.s.VersionByAlias(e.ctx, "m", "champion"); err != nil || v.Version != 2 {
		t.Fatalf("VersionByAlias after moving = %+v, %v; want version 2", v, err)
	}
	sameStrings(t, "old target's aliases", e.getVersion(t, "m", 1).Aliases, nil)
	sameStrings(t, "new target's aliases", e.getVersion(t, "m", 2).Aliases, []string{"champion"})
	if got, want := e.aliasTargets(t), []registry.AliasTarget{target("m", "champion", 2)}; !equalTargets(got, want) {
		t.Fatalf("AliasTargets = %v, want %v", got, want)
	}

	// Missing and deleted versions are refused; the alias stays put.
	for _, version := range []int64{3, 4} {
		err := e.s.SetAlias(e.ctx, "m", "champion", version)
		wantErr(t, "SetAlias to a missing or deleted version", err, forecast.ENOTFOUND, "")
	}
	if v, err := e.s.VersionByAlias(e.ctx, "m", "champion"); err != nil || v.Version != 2 {
		t.Fatalf("VersionByAlias after refused moves = %+v, %v; want version 2", v, err)
	}

	// Valid edge cases of the alias rule.
	for _, a := range []string{"v1a", "_x", "x-y", "latest2", strings.Repeat("a", registry.MaxAliasLen)} {
		e.setAlias(t, "m", a, 1)
		if v, err := e.s.VersionByAlias(e.ctx, "m", a); err != nil || v.Version != 1 {
			t.Fatalf("VersionByAlias(%.20q) = %+v, %v", a, v, err)
		}
		if err := e.s.DeleteAlias(e.ctx, "m", a); err != nil {
			t.Fatalf("DeleteAlias(%.20q): %v", a, err)
		}
	}

	if err := e.s.DeleteAlias(e.ctx, "m", "champion"); err != nil {
		t.Fatal(err)
	}
	_, err = e.s.VersionByAlias(e.ctx, "m", "champion")
	wantErr(t, "VersionByAlias after DeleteAlias", err, forecast.ENOTFOUND, "")
	wantErr(t, "DeleteAlias twice", e.s.DeleteAlias(e.ctx, "m", "champion"), forecast.ENOTFOUND, "")
	if got := e.aliasTargets(t); len(got) != 0 {
		t.Fatalf("AliasTargets after DeleteAlias = %v, want none", got)
	}
	if got := e.getModel(t, "m").Aliases; len(got) != 0 {
		t.Fatalf("model aliases after DeleteAlias = %v, want none", got)
	}
}

func testInvalidAliases(t *testing.T, e *env) {
	e.createModel(t, "m")
	e.newVersion(t, "m")
	cases := []struct{ note, alias string }{
		{"empty", ""},
		{"latest", "latest"},
		{"latest, any case", "Latest"},
		{"version reference", "v1"},
		{"version reference, any case", "V42"},
		{"space", "a b"},
		{"slash", "a/b"},
		{"dot", "a.b"},
		{"too long", strings.Repeat("a", registry.MaxAliasLen+1)},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			wantErr(t, "SetAlias", e.s.SetAlias(e.ctx, "m", tc.alias, 1), forecast.EINVALID, "alias")
		})
	}
	if got := e.aliasTargets(t); len(got) != 0 {
		t.Fatalf("refused SetAlias calls left aliases: %v", got)
	}
}
