package lazy

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Conn is a connection of any kind opened in the background: NewConn tries
// once before it returns, then, on failure, again every retry until it
// succeeds or Close is called. Until then Get fails fast with EUNAVAILABLE;
// nothing ever waits on a connection attempt but NewConn's first one.
type Conn[T any] struct {
	what    string
	v       atomic.Pointer[T]
	lastErr atomic.Pointer[error]
	closeFn func(T) error
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// NewConn opens with open (each attempt with a timeout of retry, at least
// 5 s); what names the connection in errors and logs; closeFn closes an
// opened value at Close.
func NewConn[T any](what string, open func(ctx context.Context) (T, error), closeFn func(T) error, retry time.Duration, log *slog.Logger) *Conn[T] {
	if retry <= 0 {
		retry = 5 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn[T]{what: what, closeFn: closeFn, cancel: cancel, done: make(chan struct{})}
	attempt := func() bool {
		actx, acancel := context.WithTimeout(ctx, max(retry, 5*time.Second))
		defer acancel()
		v, err := open(actx)
		if err != nil {
			c.lastErr.Store(&err)
			return false
		}
		c.v.Store(&v)
		return true
	}
	if attempt() {
		close(c.done)
		return c
	}
	log.Warn(what+" unreachable; retrying in the background", "retry", retry, "error", *c.lastErr.Load())
	go func() {
		defer close(c.done)
		t := time.NewTicker(retry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if attempt() {
					log.Info(what + " connected")
					return
				}
			}
		}
	}()
	return c
}

// Connected reports whether the connection is open.
func (c *Conn[T]) Connected() bool { return c.v.Load() != nil }

// Err is the last failed attempt's error while the connection is not
// open, nil once it is (or before the first attempt failed).
func (c *Conn[T]) Err() error {
	if c.v.Load() != nil {
		return nil
	}
	if p := c.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Get returns the opened value, or EUNAVAILABLE (wrapping the last
// attempt's error) at once while it is not open.
func (c *Conn[T]) Get() (T, error) {
	if p := c.v.Load(); p != nil {
		return *p, nil
	}
	e := &forecast.Error{Code: forecast.EUNAVAILABLE, Message: c.what + " not connected yet"}
	if p := c.lastErr.Load(); p != nil {
		e.Err = *p
	}
	var zero T
	return zero, e
}

// Close stops the attempts, waits for one in flight, and closes the opened
// value if there is one. Later calls return the first result.
func (c *Conn[T]) Close() error {
	var err error
	c.once.Do(func() {
		c.cancel()
		<-c.done
		if p := c.v.Load(); p != nil {
			err = c.closeFn(*p)
		}
	})
	return err
}
