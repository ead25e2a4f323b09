package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// damagedRegistry is a populated registry whose snapshot holds part of it
// (a compaction ran) and whose journal holds the rest; it returns the
// path and the store's state before closing it.
func damagedRegistry(t *testing.T) (string, snapshot) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	populate(t, s)
	must(t, s.saveSnapshot())
	must(t, s.journal.f.Truncate(0))
	s.journal.size = 0
	ctx := context.Background()
	for i := range 5 {
		_, err := s.CreateVersion(ctx, registry.NewVersion{Name: "carbon-forecaster-DE", Source: "s3://m/DE"})
		must(t, err)
		must(t, s.SetAlias(ctx, "carbon-forecaster-DE", registry.ChampionAlias, int64(4+i)))
	}
	before := snap(t, s)
	must(t, s.Close())
	return path, before
}

// wantRefused checks that Open fails with EINVALID whose message holds
// every one of want, and changes neither file.
func wantRefused(t *testing.T, path string, want ...string) {
	t.Helper()
	before := files(t, path)
	_, err := Open(path, registry.Options{})
	if forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("Open = %v, want EINVALID", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("Open = %v, want it to mention %q", err, w)
		}
	}
	if got := files(t, path); got != before {
		t.Fatal("Open changed files it refused")
	}
}

// TestDamageRefused: damage to either file is refused at Open, naming the
// file (and in the journal, the offset), never served as an older or
// smaller registry.
func TestDamageRefused(t *testing.T) {
	t.Parallel()
	t.Run("zeroed journal", func(t *testing.T) {
		t.Parallel()
		path, _ := damagedRegistry(t)
		j := files(t, path)[1]
		must(t, os.WriteFile(path+journalSuffix, make([]byte, len(j)), 0o644))
		wantRefused(t, path, path+journalSuffix, "record at byte 0")
	})
	t.Run("a flipped byte in the last record", func(t *testing.T) {
		t.Parallel()
		path, _ := damagedRegistry(t)
		j := files(t, path)[1]
		last := strings.LastIndex(strings.TrimSuffix(j, "\n"), "\n") + 1
		must(t, os.WriteFile(path+journalSuffix, []byte(j[:last]+flipped(t, j[last:])), 0o644))
		wantRefused(t, path, path+journalSuffix, fmt.Sprintf("record at byte %d", last), "checksum mismatch")
	})
	t.Run("snapshot deleted", func(t *testing.T) {
		t.Parallel()
		path, _ := damagedRegistry(t)
		must(t, os.Remove(path))
		_, err := Open(path, registry.Options{})
		if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), path+" is missing") {
			t.Fatalf("Open = %v, want EINVALID saying the snapshot is missing", err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("Open created a snapshot it refused")
		}
	})
	t.Run("snapshot deleted after a compaction", func(t *testing.T) {
		t.Parallel()
		path, _ := damagedRegistry(t)
		must(t, os.Remove(path))
		must(t, os.Truncate(path+journalSuffix, 0))
		_, err := Open(path, registry.Options{})
		if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), path+" is missing") {
			t.Fatalf("Open = %v, want EINVALID saying the snapshot is missing", err)
		}
	})
	t.Run("a byte changed in the snapshot", func(t *testing.T) {
		t.Parallel()
		path, _ := damagedRegistry(t)
		snapshot := files(t, path)[0]
		renamed := strings.Replace(snapshot, `"carbon-forecaster-DE"`, `"carbon-forecaster-DF"`, 1)
		if renamed == snapshot {
			t.Fatal("no model name to change")
		}
		must(t, os.WriteFile(path, []byte(renamed), 0o644))
		wantRefused(t, path, path+" is damaged", "checksum")
	})
	t.Run("a changed checksum", func(t *testing.T) {
		t.Parallel()
		path, _ := damagedRegistry(t)
		snapshot := files(t, path)[0]
		changed := regexp.MustCompile(`crc32c:[0-9a-f]{8}`).ReplaceAllString(snapshot, "crc32c:00000000")
		must(t, os.WriteFile(path, []byte(changed), 0o644))
		wantRefused(t, path, path+" is damaged", "checksum")
	})
}

// TestOpenVersion2: a registry written by the previous format (a snapshot
// without checksum, and its journal) opens with everything in both files,
// and its snapshot is rewritten once with a checksum.
func TestOpenVersion2(t *testing.T) {
	t.Parallel()
	path, before := damagedRegistry(t)
	snapshot := files(t, path)[0]
	v2 := regexp.MustCompile(`"version": 3,\n  "checksum": "crc32c:[0-9a-f]{8}",`).ReplaceAllString(snapshot, `"version": 2,`)
	if v2 == snapshot {
		t.Fatal("the snapshot has no checksum to remove")
	}
	must(t, os.WriteFile(path, []byte(v2), 0o644))
	s := open(t, path, registry.Options{})
	if got := snap(t, s); !reflect.DeepEqual(got, before) {
		t.Fatalf("after opening a version 2 registry:\n got %+v\nwant %+v", got, before)
	}
	if got := files(t, path)[0]; !strings.Contains(got, `"version": 3`) || !strings.Contains(got, `"checksum": "crc32c:`) {
		t.Fatalf("the snapshot was not rewritten with a checksum:\n%s", got)
	}
	reopened(t, s, path, before, "after reopening the migrated registry")
}
