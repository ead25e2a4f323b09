package embedded

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/carbongate/carbongate/registry"
)

// pending reports whether ch holds a notification (or is closed), without
// waiting: the store notifies before the write returns.
func pending(ch <-chan struct{}) (notified, open bool) {
	select {
	case _, ok := <-ch:
		return ok, ok
	default:
		return false, true
	}
}

func TestWatchAliases(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "registry.json"), registry.Options{})
	populate(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.WatchAliases(ctx)
	must(t, err)
	const de = "carbon-forecaster-DE"
	bg := context.Background()
	steps := []struct {
		note   string
		write  func() error
		notify bool
	}{
		{"set alias", func() error { return s.SetAlias(bg, de, registry.ChampionAlias, 1) }, true},
		{"same alias again", func() error { return s.SetAlias(bg, de, registry.ChampionAlias, 1) }, false},
		{"model tag", func() error { return s.SetModelTag(bg, de, registry.Tag{Key: "k", Value: "v"}) }, false},
		{"new version", func() error {
			_, err := s.CreateVersion(bg, registry.NewVersion{Name: de, Source: "s3://x"})
			return err
		}, false},
		{"delete aliased version", func() error { return s.DeleteVersion(bg, de, 1) }, true},
		{"delete alias", func() error { return s.DeleteAlias(bg, "carbon-forecaster-generic", registry.ChampionAlias) }, true},
		{"rename", func() error { _, err := s.RenameModel(bg, de, "renamed"); return err }, false},
		{"delete model", func() error { return s.DeleteModel(bg, "renamed") }, false},
	}
	for _, st := range steps {
		must(t, st.write())
		if got, _ := pending(ch); got != st.notify {
			t.Fatalf("%s: notified %v, want %v", st.note, got, st.notify)
		}
	}
	// Two changes in a row coalesce into one value.
	must(t, s.SetAlias(bg, "carbon-forecaster-generic", "a", 1))
	must(t, s.SetAlias(bg, "carbon-forecaster-generic", "b", 1))
	if got, _ := pending(ch); !got {
		t.Fatal("no notification after two changes")
	}
	if got, _ := pending(ch); got {
		t.Fatal("two notifications for two quick changes, want them coalesced")
	}

	cancel()
	for isOpen := true; isOpen; {
		<-ch // closed by the context's end, asynchronously
		_, isOpen = pending(ch)
	}

	other, err := s.WatchAliases(context.Background())
	must(t, err)
	must(t, s.Close())
	if _, isOpen := pending(other); isOpen {
		t.Fatal("Close left a watch channel open")
	}
}
