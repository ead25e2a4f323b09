package embedded

import (
	"context"
	"sync"

	"github.com/carbongate/carbongate/forecast"
)

// watchers are the channels of WatchAliases calls in progress.
type watchers struct {
	mu     sync.Mutex
	chans  map[chan struct{}]func() bool // channel → stop of its context.AfterFunc
	closed bool
}

// WatchAliases returns a channel that receives a value (coalesced: it
// holds at most one) after every write that changes an alias, in this
// process. It is closed when ctx ends or the store is closed; EUNAVAILABLE
// when the store is already closed.
func (s *Store) WatchAliases(ctx context.Context) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.watchers.add(ctx)
}

func (w *watchers) add(ctx context.Context) (<-chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "embedded: the store is closed")
	}
	if w.chans == nil {
		w.chans = map[chan struct{}]func() bool{}
	}
	ch := make(chan struct{}, 1)
	w.chans[ch] = context.AfterFunc(ctx, func() { w.remove(ch) })
	return ch, nil
}

// remove closes ch unless closeAll already did.
func (w *watchers) remove(ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.chans[ch]; ok {
		delete(w.chans, ch)
		close(ch)
	}
}

// notify wakes every watcher without blocking.
func (w *watchers) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.chans {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// closeAll closes every channel and refuses new watchers.
func (w *watchers) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for ch, stop := range w.chans {
		stop()
		close(ch)
	}
	w.chans = nil
}
