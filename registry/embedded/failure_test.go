package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// writes are one of each kind of write, all valid against populate's
// registry.
func writes() []struct {
	note string
	call func(ctx context.Context, s *Store) error
} {
	const de = "carbon-forecaster-DE"
	return []struct {
		note string
		call func(ctx context.Context, s *Store) error
	}{
		{"CreateModel", func(ctx context.Context, s *Store) error { _, err := s.CreateModel(ctx, "new", "", nil); return err }},
		{"UpdateModel", func(ctx context.Context, s *Store) error { _, err := s.UpdateModel(ctx, de, "x"); return err }},
		{"RenameModel", func(ctx context.Context, s *Store) error { _, err := s.RenameModel(ctx, de, "y"); return err }},
		{"DeleteModel", func(ctx context.Context, s *Store) error { return s.DeleteModel(ctx, de) }},
		{"SetModelTag", func(ctx context.Context, s *Store) error {
			return s.SetModelTag(ctx, de, registry.Tag{Key: "k", Value: "v"})
		}},
		{"DeleteModelTag", func(ctx context.Context, s *Store) error { return s.DeleteModelTag(ctx, de, "zone") }},
		{"SetAlias", func(ctx context.Context, s *Store) error { return s.SetAlias(ctx, de, registry.ChampionAlias, 1) }},
		{"DeleteAlias", func(ctx context.Context, s *Store) error { return s.DeleteAlias(ctx, de, registry.ChampionAlias) }},
		{"CreateVersion", func(ctx context.Context, s *Store) error {
			_, err := s.CreateVersion(ctx, registry.NewVersion{Name: de, Source: "s3://x"})
			return err
		}},
		{"UpdateVersion", func(ctx context.Context, s *Store) error { _, err := s.UpdateVersion(ctx, de, 1, "x"); return err }},
		{"TransitionStage", func(ctx context.Context, s *Store) error {
			_, err := s.TransitionStage(ctx, de, 1, registry.StageProduction, true)
			return err
		}},
		{"DeleteVersion", func(ctx context.Context, s *Store) error { return s.DeleteVersion(ctx, de, 2) }},
		{"SetVersionTag", func(ctx context.Context, s *Store) error {
			return s.SetVersionTag(ctx, de, 1, registry.Tag{Key: "k", Value: "v"})
		}},
		{"DeleteVersionTag", func(ctx context.Context, s *Store) error { return s.DeleteVersionTag(ctx, de, 1, "mae") }},
	}
}

func TestFailedSaveChangesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	populate(t, s)
	before := snap(t, s)
	file, err := os.ReadFile(path)
	must(t, err)
	ctx := context.Background()
	diskFull := errors.New("no space left on device")
	s.save = func(string, []byte) error { return diskFull }
	for _, w := range writes() {
		err := w.call(ctx, s)
		if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !errors.Is(err, diskFull) {
			t.Fatalf("%s with a failing save = %v, want EUNAVAILABLE caused by the save", w.note, err)
		}
		if got := snap(t, s); !reflect.DeepEqual(got, before) {
			t.Fatalf("%s changed the store although its save failed:\n got %+v\nwant %+v", w.note, got, before)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != string(file) {
			t.Fatalf("%s changed the file although its save failed (%v)", w.note, err)
		}
	}

	// The same writes succeed once saving works again.
	s.save = saveFile
	for _, w := range writes() {
		if err := w.call(ctx, s); err != nil && forecast.ErrorCode(err) != forecast.ENOTFOUND {
			t.Fatalf("%s: %v", w.note, err)
		}
	}
}

// TestSaveFailsOnDisk makes the real save fail: the directory is gone.
func TestSaveFailsOnDisk(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "registry")
	s := open(t, filepath.Join(dir, "registry.json"), registry.Options{Now: fixedClock()})
	populate(t, s)
	before := snap(t, s)
	must(t, os.RemoveAll(dir))
	_, err := s.CreateModel(context.Background(), "new", "", nil)
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CreateModel into a removed directory = %v, want EUNAVAILABLE caused by ENOENT", err)
	}
	if got := snap(t, s); !reflect.DeepEqual(got, before) {
		t.Fatalf("the failed write changed the store:\n got %+v\nwant %+v", got, before)
	}
}

// TestFailureAfterRename covers a save that renamed the file but could not
// sync the directory: the store refuses every call until it is reopened,
// and reopening shows what the file holds.
func TestFailureAfterRename(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s, err := Open(path, registry.Options{Now: fixedClock()})
	must(t, err)
	s.save = func(path string, data []byte) error {
		must(t, saveFile(path, data))
		return &dirSyncError{err: errors.New("input/output error")}
	}
	ctx := context.Background()
	if _, err := s.CreateModel(ctx, "m", "", nil); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("CreateModel = %v, want EUNAVAILABLE", err)
	}
	if _, err := s.GetModel(ctx, "m"); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("GetModel after a half-done save = %v, want EUNAVAILABLE", err)
	}
	must(t, s.Close())
	s = open(t, path, registry.Options{})
	if _, err := s.GetModel(ctx, "m"); err != nil {
		t.Fatalf("GetModel after reopening: %v", err)
	}
}
