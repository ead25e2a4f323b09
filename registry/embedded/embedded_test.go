package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/storetest"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
		return open(t, filepath.Join(t.TempDir(), "registry.json"), o)
	}, storetest.Options{Except: map[string]string{
		"Unmigrated":   "a file store has no tables to create",
		"Unreachable":  "a file store has no server",
		"Unauthorized": "a file store has no credentials",
	}})
}

// noRename is a store that cannot rename, as CrateDB's.
type noRename struct{ *Store }

func (noRename) RenameModel(context.Context, string, string) (registry.RegisteredModel, error) {
	return registry.RegisteredModel{}, forecast.FieldErrorf(forecast.EINVALID, "new_name", "this store cannot rename models")
}

// TestStoreNoRename runs the suite's NoRename branch.
func TestStoreNoRename(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
		return noRename{open(t, filepath.Join(t.TempDir(), "registry.json"), o)}
	}, storetest.Options{NoRename: true})
}

// open opens path and closes the store when the test ends.
func open(tb testing.TB, path string, o registry.Options) *Store {
	tb.Helper()
	s, err := Open(path, o)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func fixedClock() func() time.Time {
	return func() time.Time { return time.UnixMilli(1_700_000_000_000) }
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// populate writes a bit of everything: tags, versions in stages, a deleted
// version, aliases.
func populate(tb testing.TB, s *Store) {
	tb.Helper()
	ctx := context.Background()
	_, err := s.CreateModel(ctx, "carbon-forecaster-DE", "DE", []registry.Tag{{Key: "zone", Value: "DE"}})
	must(tb, err)
	_, err = s.CreateModel(ctx, "carbon-forecaster-generic", "", nil)
	must(tb, err)
	for range 3 {
		_, err := s.CreateVersion(ctx, registry.NewVersion{Name: "carbon-forecaster-DE", Source: "s3://m/DE", RunID: "run",
			Tags: []registry.Tag{{Key: "mae", Value: "12"}}})
		must(tb, err)
	}
	_, err = s.CreateVersion(ctx, registry.NewVersion{Name: "carbon-forecaster-generic", Source: "s3://m/g"})
	must(tb, err)
	_, err = s.TransitionStage(ctx, "carbon-forecaster-DE", 2, registry.StageProduction, false)
	must(tb, err)
	must(tb, s.DeleteVersion(ctx, "carbon-forecaster-DE", 3))
	must(tb, s.SetAlias(ctx, "carbon-forecaster-DE", registry.ChampionAlias, 2))
	must(tb, s.SetAlias(ctx, "carbon-forecaster-DE", "challenger", 1))
	must(tb, s.SetAlias(ctx, "carbon-forecaster-generic", registry.ChampionAlias, 1))
}

// snapshot is everything a store shows.
type snapshot struct {
	Models   []registry.RegisteredModel
	Versions []registry.ModelVersion
	Aliases  []registry.AliasTarget
}

func snap(tb testing.TB, s *Store) snapshot {
	tb.Helper()
	ctx := context.Background()
	var out snapshot
	var err error
	out.Models, _, err = s.SearchModels(ctx, registry.Search{MaxResults: MaxResults})
	must(tb, err)
	out.Versions, _, err = s.SearchVersions(ctx, registry.Search{MaxResults: MaxResults})
	must(tb, err)
	out.Aliases, err = s.AliasTargets(ctx)
	must(tb, err)
	return out
}

// reopened closes s, opens path again and checks that it shows want
// (what s showed, or should have); what names the case in the failure.
func reopened(tb testing.TB, s *Store, path string, want snapshot, what string) {
	tb.Helper()
	must(tb, s.Close())
	if got := snap(tb, open(tb, path, registry.Options{})); !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "registry.json")
	s, err := Open(path, registry.Options{Now: fixedClock()})
	must(t, err)
	populate(t, s)
	before := snap(t, s)
	must(t, s.Close())

	// A temporary file left by a crash is cleaned up; it never was the state.
	leftover := filepath.Join(filepath.Dir(path), ".registry.json.tmp-123")
	must(t, os.WriteFile(leftover, []byte("half a write"), 0o644))

	s = open(t, path, registry.Options{})
	if after := snap(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("after reopening:\n got %+v\nwant %+v", after, before)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leftover temporary file: %v", err)
	}
	v, err := s.CreateVersion(context.Background(), registry.NewVersion{Name: "carbon-forecaster-DE", Source: "s3://m/DE"})
	if err != nil || v.Version != 4 {
		t.Fatalf("CreateVersion after reopening = %d, %v; want 4 (the deleted version 3 is remembered)", v.Version, err)
	}
}

func TestOpenRefusesUnknownFiles(t *testing.T) {
	t.Parallel()
	const head = `{"format": "carbongate-registry", "version": 1, `
	cases := []struct {
		note, data, want string
	}{
		{"empty", "", "unexpected end of JSON input"},
		{"not json", "name,version\n", "invalid character"},
		{"another format", `{"format": "mlflow", "version": 1, "models": []}`, `format "mlflow"`},
		{"no format", `{"models": []}`, `format ""`},
		{"newer version", `{"format": "carbongate-registry", "version": 4, "models": []}`, "format version 4"},
		{"no checksum", `{"format": "carbongate-registry", "version": 3, "models": []}`, "is damaged: the checksum"},
		{"a checksum before version 3", head + `"checksum": "crc32c:00000000", "models": []}`, "has no checksum"},
		{"unknown field", head + `"models": [], "experiments": []}`, `unknown field "experiments"`},
		{"unknown model field", head + `"models": [{"name": "m", "workspace": "x"}]}`, `unknown field "workspace"`},
		{"trailing data", head + `"models": []} {}`, "after top-level value"},
		{"duplicate model", head + `"models": [{"name": "m"}, {"name": "m"}]}`, "appears twice"},
		{"invalid name", head + `"models": [{"name": "a/b"}]}`, "may not contain"},
		{"versions out of order", head + `"models": [{"name": "m", "versions": [{"version": 2, "current_stage": "None"}, {"version": 1, "current_stage": "None"}]}]}`, "ascending"},
		{"invalid stage", head + `"models": [{"name": "m", "versions": [{"version": 1, "current_stage": "Live"}]}]}`, "stage"},
		{"dangling alias", head + `"models": [{"name": "m", "aliases": {"champion": 1}}]}`, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "registry.json")
			must(t, os.WriteFile(path, []byte(tc.data), 0o644))
			_, err := Open(path, registry.Options{})
			if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v; want EINVALID mentioning %q", err, tc.want)
			}
			if data, err := os.ReadFile(path); err != nil || string(data) != tc.data {
				t.Fatalf("Open changed a file it refused: %q, %v", data, err)
			}
			// The refusal released the lock.
			must(t, os.WriteFile(path, []byte(head+`"models": []}`), 0o644))
			open(t, path, registry.Options{})
		})
	}
}

func TestOpenInvalidPath(t *testing.T) {
	t.Parallel()
	_, err := Open("", registry.Options{})
	if forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("Open(\"\") = %v, want EINVALID", err)
	}
}

func TestLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s, err := Open(path, registry.Options{})
	must(t, err)
	_, err = Open(path, registry.Options{})
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second Open = %v, want EUNAVAILABLE: in use", err)
	}
	must(t, s.Close())
	open(t, path, registry.Options{}) // released by Close
}

func TestClosed(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "registry.json"), registry.Options{})
	must(t, err)
	must(t, s.Close())
	must(t, s.Close())
	ctx := context.Background()
	if _, err := s.GetModel(ctx, "m"); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("GetModel after Close = %v, want EUNAVAILABLE", err)
	}
	if _, err := s.CreateModel(ctx, "m", "", nil); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("CreateModel after Close = %v, want EUNAVAILABLE", err)
	}
	if _, err := s.WatchAliases(ctx); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("WatchAliases after Close = %v, want EUNAVAILABLE", err)
	}
}
