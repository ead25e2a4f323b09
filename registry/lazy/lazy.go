// Package lazy connects in the background: until a backend opens, every
// call fails fast with EUNAVAILABLE, so a gateway can start (and keep
// serving forecasts) while its database is down. Conn does this for any
// connection (the gateway's time-series store uses it); Store is a
// registry.Store over one.
package lazy

import (
	"context"
	"log/slog"
	"time"

	"github.com/carbongate/carbongate/registry"
)

// OpenFunc opens the backend.
type OpenFunc func(ctx context.Context) (registry.Store, error)

// Store delegates to the backend once Open has succeeded.
type Store struct {
	conn *Conn[registry.Store]
}

var (
	_ registry.Store    = (*Store)(nil)
	_ registry.Notifier = (*Store)(nil)
)

// New tries open every retry (with a per-attempt timeout of retry, at least
// 5 s) until it succeeds or Close is called. The first attempt runs before
// New returns, so a reachable backend is ready at once.
func New(open OpenFunc, retry time.Duration, log *slog.Logger) *Store {
	return &Store{conn: NewConn("registry", open, func(s registry.Store) error { return s.Close() }, retry, log)}
}

// Connected reports whether the backend is open.
func (l *Store) Connected() bool { return l.conn.Connected() }

// OpenErr is why the backend is not open yet: the last attempt's error,
// nil once it is open.
func (l *Store) OpenErr() error { return l.conn.Err() }

func (l *Store) get() (registry.Store, error) { return l.conn.Get() }

// Close stops the attempts and closes the backend if it was opened.
func (l *Store) Close() error { return l.conn.Close() }

// WatchAliases delegates when the backend is a Notifier;
// registry.ErrCannotNotify otherwise (the watcher then polls).
func (l *Store) WatchAliases(ctx context.Context) (<-chan struct{}, error) {
	s, err := l.get()
	if err != nil {
		return nil, err
	}
	n, ok := s.(registry.Notifier)
	if !ok {
		return nil, registry.ErrCannotNotify
	}
	return n.WatchAliases(ctx)
}
