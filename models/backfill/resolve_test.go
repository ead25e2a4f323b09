package backfill

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/registry/fetch"
)

// A models:/ URI resolves through the registry to the alias's version,
// fetched (here from a local directory) and loaded; a template without
// {zone} (the generic model) is fetched once for every zone.
func TestRegistrySourceModels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg, err := embedded.Open(filepath.Join(t.TempDir(), "registry.db"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	src := t.TempDir()
	m := servetest.Ridge(t, "carbon-forecaster-generic", "", 1)
	servetest.Save(t, src, m)
	if _, err := reg.CreateModel(ctx, "carbon-forecaster-generic", "", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := reg.CreateVersion(ctx, registry.NewVersion{Name: "carbon-forecaster-generic", Source: src}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetAlias(ctx, "carbon-forecaster-generic", "champion", 2); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	rs := RegistrySource{Store: reg, CacheDir: cache, Fetch: fetch.Fetcher{Sources: []string{src}}}
	got, err := rs.Models(ctx, "models:/carbon-forecaster-generic@champion", m.Meta().Signal, []forecast.Zone{"DE", "SE"})
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range []forecast.Zone{"DE", "SE"} {
		if bm := got[z]; bm.Name != "carbon-forecaster-generic" || bm.Version != "2" || bm.Lookback != m.Meta().Lookback {
			t.Fatalf("zone %s: %+v, want version 2 of the generic model", z, bm)
		}
	}
	if got["DE"].Predictor != got["SE"].Predictor {
		t.Fatal("the generic model was loaded once per zone")
	}
	if _, err := rs.Models(ctx, "models:/carbon-forecaster-{zone}@champion", m.Meta().Signal, []forecast.Zone{"DE"}); forecast.ErrorCode(err) != forecast.ENOTFOUND || forecast.ErrorField(err) != "model" {
		t.Fatalf("missing model: %v, want ENOTFOUND naming model", err)
	}
}
