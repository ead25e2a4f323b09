package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// testTagLimits checks registry.ValidateTagTotals' caps on the tags of one
// model or version, for a backend that enforces them: the last tag that
// fits is taken, the next is EINVALID naming "tags" and changes nothing,
// an overwrite at the cap and a delete are still taken; CreateModel and
// CreateVersion with too many tags are refused whole.
func testTagLimits(t *testing.T, e *env) {
	e.createModel(t, "m")
	v := e.newVersion(t, "m")
	setters := []struct {
		note string
		set  func(registry.Tag) error
		del  func(key string) error
		get  func() []registry.Tag
	}{
		{"model",
			func(tg registry.Tag) error { return e.s.SetModelTag(e.ctx, "m", tg) },
			func(k string) error { return e.s.DeleteModelTag(e.ctx, "m", k) },
			func() []registry.Tag { return e.getModel(t, "m").Tags }},
		{"version",
			func(tg registry.Tag) error { return e.s.SetVersionTag(e.ctx, "m", v.Version, tg) },
			func(k string) error { return e.s.DeleteVersionTag(e.ctx, "m", v.Version, k) },
			func() []registry.Tag { return e.getVersion(t, "m", v.Version).Tags }},
	}
	for _, s := range setters {
		for i := range registry.MaxTags {
			if err := s.set(tag(fmt.Sprintf("k%03d", i), "v")); err != nil {
				t.Fatalf("%s: tag %d of %d: %v", s.note, i+1, registry.MaxTags, err)
			}
		}
		wantErr(t, s.note+": one tag over the count", s.set(tag("over", "v")), forecast.EINVALID, "tags")
		if n := len(s.get()); n != registry.MaxTags {
			t.Fatalf("%s: %d tags after a refused write, want %d", s.note, n, registry.MaxTags)
		}
		if err := s.set(tag("k000", "overwritten")); err != nil {
			t.Fatalf("%s: overwriting a tag at the cap: %v", s.note, err)
		}
		if err := s.del("k001"); err != nil {
			t.Fatal(err)
		}
		if err := s.set(tag("again", "v")); err != nil {
			t.Fatalf("%s: a tag after a delete at the cap: %v", s.note, err)
		}
		for i := range registry.MaxTags {
			if err := s.del(fmt.Sprintf("k%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
		// Bytes: the largest tags MaxTagBytes holds, then one more.
		big := func(i int) registry.Tag {
			return tag(fmt.Sprintf("b%0*d", registry.MaxTagKeyLen-1, i), strings.Repeat("v", registry.MaxTagValueLen))
		}
		fit := (registry.MaxTagBytes - len("again") - len("v")) / (registry.MaxTagKeyLen + registry.MaxTagValueLen)
		for i := range fit {
			if err := s.set(big(i)); err != nil {
				t.Fatalf("%s: large tag %d of %d: %v", s.note, i+1, fit, err)
			}
		}
		wantErr(t, s.note+": one tag over the bytes", s.set(big(fit)), forecast.EINVALID, "tags")
	}
	many := make([]registry.Tag, registry.MaxTags+1)
	for i := range many {
		many[i] = tag(fmt.Sprintf("k%03d", i), "v")
	}
	_, err := e.s.CreateModel(e.ctx, "many", "", many)
	wantErr(t, "CreateModel with too many tags", err, forecast.EINVALID, "tags")
	_, err = e.s.GetModel(e.ctx, "many")
	wantErr(t, "GetModel after a refused CreateModel", err, forecast.ENOTFOUND, "")
	_, err = e.s.CreateVersion(e.ctx, registry.NewVersion{Name: "m", Source: "s3://m/2", Tags: many})
	wantErr(t, "CreateVersion with too many tags", err, forecast.EINVALID, "tags")
	if got := e.newVersion(t, "m").Version; got != v.Version+1 {
		t.Fatalf("the next version is %d after a refused CreateVersion, want %d", got, v.Version+1)
	}
}
