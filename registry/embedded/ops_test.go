package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// TestWriteAppendsTheChange: a one-tag write appends about the tag, not
// the model or version that holds it, however many tags those hold (it
// appended the whole version: ~15 MB a write with 3,000 tags of 5 KB).
func TestWriteAppendsTheChange(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	s.compactMin = 1 << 40 // keep every record in the journal
	populate(t, s)
	ctx := context.Background()
	const de = "carbon-forecaster-DE"
	value := strings.Repeat("v", registry.MaxTagValueLen)
	for i := range 40 { // 200 KB of tags on the model and on version 1
		must(t, s.SetModelTag(ctx, de, registry.Tag{Key: fmt.Sprintf("k%02d", i), Value: value}))
		must(t, s.SetVersionTag(ctx, de, 1, registry.Tag{Key: fmt.Sprintf("k%02d", i), Value: value}))
	}
	for _, w := range []struct {
		note  string
		write func() error
	}{
		{"SetVersionTag", func() error { return s.SetVersionTag(ctx, de, 1, registry.Tag{Key: "k00", Value: "short"}) }},
		{"DeleteVersionTag", func() error { return s.DeleteVersionTag(ctx, de, 1, "k01") }},
		{"SetModelTag", func() error { return s.SetModelTag(ctx, de, registry.Tag{Key: "k00", Value: "short"}) }},
		{"DeleteModelTag", func() error { return s.DeleteModelTag(ctx, de, "k01") }},
		{"UpdateVersion", func() error { _, err := s.UpdateVersion(ctx, de, 1, "new description"); return err }},
		{"SetAlias", func() error { return s.SetAlias(ctx, de, "challenger", 2) }},
	} {
		before := s.journal.size
		must(t, w.write())
		if grew := s.journal.size - before; grew > 1024 {
			t.Errorf("%s appended %d bytes to the journal, want under 1 KiB (the change only)", w.note, grew)
		}
	}
	reopened(t, s, path, snap(t, s), "after replaying the changes")
}

// TestReplayOntoNewerSnapshot: a journal replayed onto a snapshot that
// already holds all of it (a crash after a compaction wrote the snapshot,
// before it emptied the journal) gives the same registry, after every
// kind of write.
func TestReplayOntoNewerSnapshot(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	s.compactMin = 1 << 40
	populate(t, s)
	ctx := context.Background()
	done := 0
	all := writes()
	// RenameModel and DeleteModel last: after them, DE is gone and the
	// second of them fails (ENOTFOUND), appending nothing.
	slices.SortStableFunc(all, func(a, b writeCase) int {
		last := func(w writeCase) bool { return w.note == "RenameModel" || w.note == "DeleteModel" }
		return cmpBool(last(a), last(b))
	})
	for _, w := range all {
		if err := w.call(ctx, s); err == nil {
			done++
		} else if forecast.ErrorCode(err) != forecast.ENOTFOUND {
			t.Fatalf("%s: %v", w.note, err)
		}
	}
	if done < len(all)-1 {
		t.Fatalf("only %d writes succeeded", done)
	}
	must(t, s.saveSnapshot()) // the journal keeps every record
	if j := files(t, path)[1]; strings.Count(j, "\n") < done {
		t.Fatalf("the journal holds %d records, want every write", strings.Count(j, "\n"))
	}
	reopened(t, s, path, snap(t, s), "after replaying the journal onto a snapshot that holds it")
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// TestReplayFormat2Put: a journal written by format 2 (whole models in
// "put" records) replays as it did.
func TestReplayFormat2Put(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	s := open(t, path, registry.Options{Now: fixedClock()})
	populate(t, s)
	must(t, s.Close())
	put := &model{Name: "carbon-forecaster-DE", CreationTime: 1, LastUpdatedTime: 2, Tags: map[string]string{"only": "this"},
		Aliases: map[string]int64{registry.ChampionAlias: 1},
		Versions: []*version{{Version: 1, CreationTime: 1, LastUpdatedTime: 2, CurrentStage: registry.StageNone, Status: registry.StatusReady,
			Tags: map[string]string{"replaced": "whole"}}}}
	f, err := os.OpenFile(path+journalSuffix, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(mustRecord(t, []op{{Put: put}}))
	must(t, err)
	must(t, f.Close())
	s = open(t, path, registry.Options{})
	m, err := s.GetModel(context.Background(), "carbon-forecaster-DE")
	must(t, err)
	if !reflect.DeepEqual(m.Tags, []registry.Tag{{Key: "only", Value: "this"}}) || len(m.Aliases) != 1 || m.Aliases[0].Version != 1 {
		t.Fatalf("model after a put: %+v", m)
	}
	v, err := s.GetVersion(context.Background(), "carbon-forecaster-DE", 1)
	must(t, err)
	if !reflect.DeepEqual(v.Tags, []registry.Tag{{Key: "replaced", Value: "whole"}}) {
		t.Fatalf("version 1 after a put: %+v", v.Tags)
	}
	if _, err := s.GetVersion(context.Background(), "carbon-forecaster-DE", 2); err != nil {
		t.Fatalf("version 2, which the put does not list, is gone: %v", err)
	}
}
