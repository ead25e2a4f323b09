package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// writeCase is one write of writes.
type writeCase struct {
	note string
	call func(ctx context.Context, s *Store) error
}

// writes are one of each kind of write, all valid against populate's
// registry.
func writes() []writeCase {
	const de = "carbon-forecaster-DE"
	return []writeCase{
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

// files returns the bytes of the snapshot and of the journal.
func files(tb testing.TB, path string) [2]string {
	tb.Helper()
	var out [2]string
	for i, p := range []string{path, path + journalSuffix} {
		b, err := os.ReadFile(p)
		must(tb, err)
		out[i] = string(b)
	}
	return out
}

// TestFailedWriteChangesNothing: an append to the journal that fails half
// way is cut off again; the store and both files keep what they held.
func TestFailedWriteChangesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	populate(t, s)
	before, onDisk := snap(t, s), files(t, path)
	ctx := context.Background()
	diskFull := errors.New("no space left on device")
	s.writeAt = func(f *os.File, b []byte, off int64) (int, error) {
		n, _ := f.WriteAt(b[:len(b)/2], off)
		return n, diskFull
	}
	for _, w := range writes() {
		err := w.call(ctx, s)
		if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !errors.Is(err, diskFull) {
			t.Fatalf("%s with a failing append = %v, want EUNAVAILABLE caused by the append", w.note, err)
		}
		if got := snap(t, s); !reflect.DeepEqual(got, before) {
			t.Fatalf("%s changed the store although its append failed:\n got %+v\nwant %+v", w.note, got, before)
		}
		if got := files(t, path); got != onDisk {
			t.Fatalf("%s changed the files although its append failed", w.note)
		}
	}

	// The same writes succeed once writing works again, and reopening
	// (replaying the journal) shows what the store showed.
	s.writeAt = (*os.File).WriteAt
	for _, w := range writes() {
		if err := w.call(ctx, s); err != nil && forecast.ErrorCode(err) != forecast.ENOTFOUND {
			t.Fatalf("%s: %v", w.note, err)
		}
	}
	reopened(t, s, path, snap(t, s), "after reopening")
}

// TestJournalSyncFails: when the journal cannot be synced the write may
// or may not be on disk, so the store refuses every call until it is
// opened again; reopening shows what the files hold.
func TestJournalSyncFails(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s, err := Open(path, registry.Options{Now: fixedClock()})
	must(t, err)
	s.syncFile = func(*os.File) error { return errors.New("input/output error") }
	ctx := context.Background()
	if _, err := s.CreateModel(ctx, "m", "", nil); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("CreateModel = %v, want EUNAVAILABLE", err)
	}
	if _, err := s.GetModel(ctx, "m"); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("GetModel after a failed sync = %v, want EUNAVAILABLE", err)
	}
	must(t, s.Close())
	s = open(t, path, registry.Options{})
	if _, err := s.GetModel(ctx, "m"); err != nil {
		t.Fatalf("GetModel after reopening: %v", err)
	}
}

// TestCompaction: the journal is folded into the snapshot once it
// outgrows it; a compaction that fails loses nothing and is tried again.
func TestCompaction(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	s.compactMin = 0
	ctx := context.Background()
	s.save = func(string, []byte) error { return errors.New("no space left on device") }
	populate(t, s) // every write tries to compact, and fails
	if j := files(t, path)[1]; strings.Count(j, "\n") < 10 {
		t.Fatalf("the journal holds %d records after failed compactions, want every write", strings.Count(j, "\n"))
	}
	s.save = saveFile
	must(t, s.SetModelTag(ctx, "carbon-forecaster-DE", registry.Tag{Key: "k", Value: "v"}))
	if j := files(t, path)[1]; j != "" {
		t.Fatalf("the journal holds %q after a compaction, want nothing", j)
	}
	reopened(t, s, path, snap(t, s), "after reopening a compacted registry")
}
