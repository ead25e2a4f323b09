package watch_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/registry/watch"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

// wait bounds every wait for something that should happen.
const wait = 10 * time.Second

// quiet is how long a test waits for something that should not happen.
const quiet = 150 * time.Millisecond

// newStore returns an embedded store with model m and versions 1 and 2.
func newStore(t *testing.T) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "registry.json"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://m"}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func setAlias(t *testing.T, s registry.Store, alias string, version int64) {
	t.Helper()
	if err := s.SetAlias(context.Background(), "m", alias, version); err != nil {
		t.Fatal(err)
	}
}

// pollingStore hides the embedded store's Notifier, counts reads and fails
// the first ones on request.
type pollingStore struct {
	registry.Store
	fail  atomic.Int32 // reads left to fail
	reads atomic.Int32
}

func (p *pollingStore) AliasTargets(ctx context.Context) ([]registry.AliasTarget, error) {
	p.reads.Add(1)
	if p.fail.Add(-1) >= 0 {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "connection refused")
	}
	return p.Store.AliasTargets(ctx)
}

// notifyingStore is a pollingStore whose WatchAliases answers with answer
// (n counts the calls from 1).
type notifyingStore struct {
	*pollingStore
	watches atomic.Int32
	answer  func(ctx context.Context, n int32) (<-chan struct{}, error)
}

func (s *notifyingStore) WatchAliases(ctx context.Context) (<-chan struct{}, error) {
	return s.answer(ctx, s.watches.Add(1))
}

// start runs w until the test ends and returns the snapshots fn receives.
func start(t *testing.T, w *watch.Watcher) <-chan []registry.AliasTarget {
	t.Helper()
	calls := make(chan []registry.AliasTarget, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func(s []registry.AliasTarget) {
			calls <- slices.Clone(s)
			clear(s) // fn owns the slice: scribbling on it changes nothing
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	})
	return calls
}

func next(t *testing.T, calls <-chan []registry.AliasTarget) []registry.AliasTarget {
	t.Helper()
	select {
	case s := <-calls:
		return s
	case <-time.After(wait):
		t.Fatal("no snapshot")
		return nil
	}
}

func want(t *testing.T, calls <-chan []registry.AliasTarget, targets ...registry.AliasTarget) {
	t.Helper()
	if got := next(t, calls); !slices.Equal(got, targets) {
		t.Fatalf("snapshot %v, want %v", got, targets)
	}
}

func none(t *testing.T, calls <-chan []registry.AliasTarget) {
	t.Helper()
	select {
	case s := <-calls:
		t.Fatalf("unexpected snapshot %v: it equals the previous one", s)
	case <-time.After(quiet):
	}
}

func target(alias string, version int64) registry.AliasTarget {
	return registry.AliasTarget{Name: "m", Alias: alias, Version: version}
}

func TestPolling(t *testing.T) {
	t.Parallel()
	s := &pollingStore{Store: newStore(t)}
	calls := start(t, watch.New(s, watch.Config{Interval: 5 * time.Millisecond}))
	want(t, calls) // the empty table, once
	setAlias(t, s, "champion", 1)
	want(t, calls, target("champion", 1))
	setAlias(t, s, "champion", 2)
	setAlias(t, s, "challenger", 1)
	if got := next(t, calls); !slices.Equal(got, []registry.AliasTarget{target("challenger", 1), target("champion", 2)}) {
		// The two writes may land in two polls.
		want(t, calls, target("challenger", 1), target("champion", 2))
	}
	setAlias(t, s, "champion", 2) // no change
	none(t, calls)
	if err := s.DeleteAlias(context.Background(), "m", "challenger"); err != nil {
		t.Fatal(err)
	}
	want(t, calls, target("champion", 2))
}

// TestEmbeddedNotifier polls once per hour: only notifications can bring
// the change in time.
func TestEmbeddedNotifier(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	calls := start(t, watch.New(s, watch.Config{Interval: time.Hour}))
	want(t, calls)
	setAlias(t, s, "champion", 1)
	want(t, calls, target("champion", 1))
	setAlias(t, s, "champion", 2)
	want(t, calls, target("champion", 2))
}

func TestNotification(t *testing.T) {
	t.Parallel()
	ch := make(chan struct{}, 1)
	s := &notifyingStore{pollingStore: &pollingStore{Store: newStore(t)}}
	s.answer = func(context.Context, int32) (<-chan struct{}, error) { return ch, nil }
	calls := start(t, watch.New(s, watch.Config{Interval: time.Hour}))
	want(t, calls)
	setAlias(t, s, "champion", 1)
	none(t, calls) // no notification, no poll before an hour
	ch <- struct{}{}
	want(t, calls, target("champion", 1))
	ch <- struct{}{} // nothing changed: read, but no snapshot
	eventually(t, "the second notification read", func() bool { return s.reads.Load() >= 3 })
	none(t, calls)
	if got := s.reads.Load(); got != 3 {
		t.Fatalf("%d reads, want 3 (the first and one per notification)", got)
	}
}

// TestNotifierSlowsPolling: with a notifier, reads happen every
// 10 × Interval, not every Interval.
func TestNotifierSlowsPolling(t *testing.T) {
	t.Parallel()
	s := &notifyingStore{pollingStore: &pollingStore{Store: newStore(t)}}
	s.answer = func(context.Context, int32) (<-chan struct{}, error) { return make(chan struct{}), nil }
	calls := start(t, watch.New(s, watch.Config{Interval: 40 * time.Millisecond}))
	want(t, calls)
	time.Sleep(200 * time.Millisecond) // 5 intervals, half a safety-net period
	if got := s.reads.Load(); got > 2 {
		t.Fatalf("%d reads in 5 intervals with a notifier, want at most 2", got)
	}
}

func TestNotifierMissing(t *testing.T) {
	t.Parallel()
	later := make(chan struct{}, 1)
	s := &notifyingStore{pollingStore: &pollingStore{Store: newStore(t)}}
	s.answer = func(_ context.Context, n int32) (<-chan struct{}, error) {
		if n == 1 {
			return nil, forecast.Errorf(forecast.ENOTFOUND, "trigger not installed")
		}
		return later, nil
	}
	logs := &testsupport.SyncBuffer{}
	calls := start(t, watch.New(s, watch.Config{Interval: 5 * time.Millisecond, Logger: logger(logs)}))
	want(t, calls)
	setAlias(t, s, "champion", 1) // found by polling
	want(t, calls, target("champion", 1))
	eventually(t, "the notifier is tried again", func() bool { return s.watches.Load() >= 2 })
	eventually(t, "the fallback is logged", func() bool { return strings.Contains(logs.String(), "trigger not installed") })
}

func TestNotifierNever(t *testing.T) {
	t.Parallel()
	s := &notifyingStore{pollingStore: &pollingStore{Store: newStore(t)}}
	s.answer = func(context.Context, int32) (<-chan struct{}, error) { return nil, registry.ErrCannotNotify }
	logs := &testsupport.SyncBuffer{}
	calls := start(t, watch.New(s, watch.Config{Interval: 5 * time.Millisecond, Logger: logger(logs)}))
	want(t, calls)
	setAlias(t, s, "champion", 1) // found by polling
	want(t, calls, target("champion", 1))
	// Polling goes on (ten more reads, however slowly a loaded machine
	// runs them), and over those reads, more than the notifier's retry
	// period, the notifier is not tried again.
	from := s.reads.Load()
	eventually(t, "polling goes on", func() bool { return s.reads.Load() >= from+10 })
	time.Sleep(quiet) // at least 3 notifier retry periods
	if n := s.watches.Load(); n != 1 {
		t.Fatalf("WatchAliases called %d times by a store that can never notify, want 1", n)
	}
	if n := strings.Count(logs.String(), "cannot notify"); n != 1 {
		t.Fatalf("the fallback logged %d times, want once:\n%s", n, logs)
	}
}

func TestNotifierCloses(t *testing.T) {
	t.Parallel()
	first := make(chan struct{})
	var subs sync.Map // n → ctx of the subscription
	s := &notifyingStore{pollingStore: &pollingStore{Store: newStore(t)}}
	s.answer = func(ctx context.Context, n int32) (<-chan struct{}, error) {
		subs.Store(n, ctx)
		if n == 1 {
			return first, nil
		}
		return make(chan struct{}), nil
	}
	calls := start(t, watch.New(s, watch.Config{Interval: 5 * time.Millisecond}))
	want(t, calls)
	close(first) // the connection was lost
	setAlias(t, s, "champion", 1)
	want(t, calls, target("champion", 1))
	eventually(t, "the notifier is tried again", func() bool { return s.watches.Load() >= 2 })
	ctx, _ := subs.Load(int32(1))
	if ctx.(context.Context).Err() == nil {
		t.Fatal("the closed subscription's context was not canceled")
	}
}

func TestReadFailures(t *testing.T) {
	t.Parallel()
	s := &pollingStore{Store: newStore(t)}
	setAlias(t, s, "champion", 1)
	s.fail.Store(3)
	logs := &testsupport.SyncBuffer{}
	var mu sync.Mutex
	var reads []bool // OnRead: whether each read succeeded
	calls := start(t, watch.New(s, watch.Config{Interval: 5 * time.Millisecond, Logger: logger(logs),
		OnRead: func(err error) { mu.Lock(); reads = append(reads, err == nil); mu.Unlock() }}))
	want(t, calls, target("champion", 1))
	mu.Lock()
	if len(reads) < 4 || !slices.Equal(reads[:4], []bool{false, false, false, true}) {
		t.Errorf("OnRead saw %v, want three failures then a success", reads)
	}
	mu.Unlock()
	if got := s.reads.Load(); got < 4 {
		t.Fatalf("first snapshot after %d reads, want 4 (three failures)", got)
	}
	for _, text := range []string{"connection refused", "failures=3", "readable again"} {
		if !strings.Contains(logs.String(), text) {
			t.Fatalf("logs lack %q:\n%s", text, logs)
		}
	}
}

func TestRunInvalid(t *testing.T) {
	t.Parallel()
	err := watch.New(nil, watch.Config{}).Run(context.Background(), func([]registry.AliasTarget) {})
	if forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("Run without a store = %v, want EINVALID", err)
	}
	err = watch.New(newStore(t), watch.Config{}).Run(context.Background(), nil)
	if forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("Run without fn = %v, want EINVALID", err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(wait); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: did not happen within %v", what, wait)
		}
	}
}

func logger(b *testsupport.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
