// Package lazy is a registry.Store that connects in the background: until
// its backend opens, every call fails fast with EUNAVAILABLE, so a gateway
// can start (and keep serving forecasts) while its database is down.
package lazy

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// OpenFunc opens the backend.
type OpenFunc func(ctx context.Context) (registry.Store, error)

// Store delegates to the backend once Open has succeeded.
type Store struct {
	s       atomic.Pointer[registry.Store]
	cancel  context.CancelFunc
	done    chan struct{}
	lastErr atomic.Pointer[error]
	once    sync.Once
}

var (
	_ registry.Store    = (*Store)(nil)
	_ registry.Notifier = (*Store)(nil)
)

// New tries open every retry (with a per-attempt timeout of retry, at least
// 5 s) until it succeeds or Close is called. The first attempt runs before
// New returns, so a reachable backend is ready at once.
func New(open OpenFunc, retry time.Duration, log *slog.Logger) *Store {
	if retry <= 0 {
		retry = 5 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Store{cancel: cancel, done: make(chan struct{})}
	attempt := func() bool {
		actx, acancel := context.WithTimeout(ctx, max(retry, 5*time.Second))
		defer acancel()
		s, err := open(actx)
		if err != nil {
			l.lastErr.Store(&err)
			return false
		}
		l.s.Store(&s)
		return true
	}
	if attempt() {
		close(l.done)
		return l
	}
	log.Warn("registry unreachable; retrying in the background", "retry", retry, "error", *l.lastErr.Load())
	go func() {
		defer close(l.done)
		t := time.NewTicker(retry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if attempt() {
					log.Info("registry connected")
					return
				}
			}
		}
	}()
	return l
}

// Connected reports whether the backend is open.
func (l *Store) Connected() bool { return l.s.Load() != nil }

func (l *Store) get() (registry.Store, error) {
	if p := l.s.Load(); p != nil {
		return *p, nil
	}
	e := &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "registry database not connected yet"}
	if p := l.lastErr.Load(); p != nil {
		e.Err = *p
	}
	return nil, e
}

// Close stops connecting and closes the backend if open.
func (l *Store) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		<-l.done
		if p := l.s.Load(); p != nil {
			err = (*p).Close()
		}
	})
	return err
}

// WatchAliases delegates when the backend is a Notifier; ENOTFOUND
// otherwise (the watcher then polls).
func (l *Store) WatchAliases(ctx context.Context) (<-chan struct{}, error) {
	s, err := l.get()
	if err != nil {
		return nil, err
	}
	n, ok := s.(registry.Notifier)
	if !ok {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "the registry backend cannot notify")
	}
	return n.WatchAliases(ctx)
}
