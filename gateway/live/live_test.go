package live_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/gateway/live"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/history"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/registry/fetch"
)

type fixture struct {
	cache   string // the fetched versions
	store   *embedded.Store
	models  *live.Models
	mu      sync.Mutex
	changes []live.Changed
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "reg.db"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: s, cache: t.TempDir()}
	f.models, err = live.New(live.Config{
		// The models are saved in test temporary directories.
		Store: s, Fetcher: fetch.Fetcher{Sources: []string{os.TempDir()}}, History: history.New(tables), CacheDir: f.cache,
		Watch: func(ctx context.Context, fn func([]registry.AliasTarget)) error { return nil },
		OnChange: func(c []live.Changed) {
			f.mu.Lock()
			f.changes = append(f.changes, c...)
			f.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// version registers a model directory (seed varies the weights) as the
// next version of name.
func (f *fixture) version(t *testing.T, name string, zone forecast.Zone, seed int) int64 {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	servetest.Save(t, dir, servetest.Ridge(t, name, zone, seed))
	ctx := context.Background()
	if _, err := f.store.GetModel(ctx, name); err != nil {
		if _, err := f.store.CreateModel(ctx, name, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	v, err := f.store.CreateVersion(ctx, registry.NewVersion{Name: name, Source: dir})
	if err != nil {
		t.Fatal(err)
	}
	return v.Version
}

func (f *fixture) promote(t *testing.T, name string, v int64) {
	t.Helper()
	ctx := context.Background()
	if err := f.store.SetAlias(ctx, name, registry.ChampionAlias, v); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
}

func (f *fixture) sync(t *testing.T) {
	t.Helper()
	targets, err := f.store.AliasTargets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.models.Sync(context.Background(), targets)
}

func (f *fixture) served(t *testing.T, zone forecast.Zone) string {
	t.Helper()
	var fc forecast.Forecaster
	if zone == "" {
		fc = f.models.Generic(forecast.SignalLifecycle)
	} else {
		fc = f.models.Zone(zone, forecast.SignalLifecycle)
	}
	if fc == nil {
		return ""
	}
	got, err := fc.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle,
		Start: time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC), Horizon: 12})
	if err != nil {
		t.Fatal(err)
	}
	return got.Provenance.Version
}

// TestPromotion: the champion serves, labelled with its registry version;
// moving the alias swaps it; a version that fails to load leaves the
// previous one serving and is reported; removing the alias stops it.
func TestPromotion(t *testing.T) {
	f := newFixture(t)
	de := models.ZoneModelName("DE")
	v1 := f.version(t, de, "DE", 0)
	v2 := f.version(t, de, "DE", 1)
	g1 := f.version(t, models.GenericName, "", 2)
	f.sync(t)
	if got := f.served(t, "DE"); got != "" {
		t.Fatalf("served %q before any alias", got)
	}
	f.promote(t, de, v1)
	f.promote(t, models.GenericName, g1)
	if got := f.served(t, "DE"); got != "1" {
		t.Fatalf("DE served version %q, want 1", got)
	}
	if got := f.served(t, ""); got != "1" {
		t.Fatalf("generic served version %q, want 1", got)
	}
	f.promote(t, de, v2)
	if got := f.served(t, "DE"); got != "2" {
		t.Fatalf("after promotion DE served %q, want 2", got)
	}
	// Version 3 points at nothing: 2 keeps serving, Status says why.
	v3, err := f.store.CreateVersion(context.Background(), registry.NewVersion{Name: de, Source: filepath.Join(t.TempDir(), "gone")})
	if err != nil {
		t.Fatal(err)
	}
	f.promote(t, de, v3.Version)
	if got := f.served(t, "DE"); got != "2" {
		t.Fatalf("after a broken promotion DE served %q, want 2 still", got)
	}
	if st := f.models.Status(); st.Err == nil || st.Versions[de] != 2 {
		t.Fatalf("status %+v, want the load error and version 2 serving", st)
	}
	if err := f.store.DeleteAlias(context.Background(), de, registry.ChampionAlias); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	if got := f.served(t, "DE"); got != "" {
		t.Fatalf("DE still served %q after its alias was removed", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var versions []string
	for _, c := range f.changes {
		if c.Zone == "DE" {
			versions = append(versions, c.Version)
		}
	}
	if want := []string{"1", "2", ""}; !slices.Equal(versions, want) {
		t.Fatalf("DE changes %q, want %q", versions, want)
	}
}

// TestWrongZone: a version whose model is of another zone is refused.
func TestWrongZone(t *testing.T) {
	f := newFixture(t)
	de := models.ZoneModelName("DE")
	dir := filepath.Join(t.TempDir(), "se")
	servetest.Save(t, dir, servetest.Ridge(t, "carbon-forecaster-SE", "SE", 0))
	if _, err := f.store.CreateModel(context.Background(), de, "", nil); err != nil {
		t.Fatal(err)
	}
	v, err := f.store.CreateVersion(context.Background(), registry.NewVersion{Name: de, Source: dir})
	if err != nil {
		t.Fatal(err)
	}
	f.promote(t, de, v.Version)
	if f.models.Zone("DE", forecast.SignalLifecycle) != nil || f.models.Zone("SE", forecast.SignalLifecycle) != nil {
		t.Fatal("a model of SE registered as DE was served")
	}
	if st := f.models.Status(); st.Err == nil {
		t.Fatal("no error reported")
	}
	if _, err := os.Stat(filepath.Join(f.cache, de, "1")); !os.IsNotExist(err) {
		t.Fatalf("the copy of the refused version stays in the cache: %v", err)
	}
}

// TestUntrustedSource: a version whose source lies outside the allowed
// sources is not copied, and the status, which /readyz shows to anyone,
// names the model and version but no path.
func TestUntrustedSource(t *testing.T) {
	f := newFixture(t)
	de := models.ZoneModelName("DE")
	if _, err := f.store.CreateModel(context.Background(), de, "", nil); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"/etc", "/etc/passwd"} {
		v, err := f.store.CreateVersion(context.Background(), registry.NewVersion{Name: de, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		f.promote(t, de, v.Version)
		st := f.models.Status()
		if st.Err == nil || f.models.Zone("DE", forecast.SignalLifecycle) != nil {
			t.Fatalf("%s: status %+v, want a load error and nothing served", src, st)
		}
		note := st.String()
		if strings.Contains(note, "/etc") || !strings.Contains(note, fmt.Sprintf("%s version %d", de, v.Version)) {
			t.Fatalf("%s: status note %q shows a path or does not name the version", src, note)
		}
		if ents, err := os.ReadDir(filepath.Join(f.cache, de)); err == nil && len(ents) > 0 {
			t.Fatalf("%s: copied into the cache: %v", src, ents)
		}
	}
}
