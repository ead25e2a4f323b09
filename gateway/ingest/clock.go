package ingest

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/retry"
)

// Clock tells the time and waits. The Poller and TokenBucket take one so
// that tests (and replays) decide how time passes.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until ctx ends, in which case it returns
	// ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the machine's clock.
type SystemClock struct{}

var _ Clock = SystemClock{}

// Now returns time.Now in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// Sleep waits on a timer.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error { return retry.Sleep(ctx, d) }

// ManualClock is a Clock that moves only when told: Sleep advances it by d
// at once (and records d), Set and Add move it. It never blocks, so tests
// assert on the recorded sleeps instead of the wall clock. Safe for
// concurrent use.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

var _ Clock = (*ManualClock)(nil)

// NewManualClock returns a ManualClock that reads now.
func NewManualClock(now time.Time) *ManualClock { return &ManualClock{now: now.UTC()} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and advances the clock by it, unless ctx has ended.
func (c *ManualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
}

// Add moves the clock by d.
func (c *ManualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleeps returns the durations slept so far, in order.
func (c *ManualClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// TokenBucket limits the rate of requests: it holds up to Burst tokens,
// gains PerSecond tokens a second, and every request takes one, waiting
// for it when the bucket is empty. Waiters are served in arrival order.
// It is a golang.org/x/time/rate Limiter read and waited on through the
// Clock, so tests and replays decide how time passes. Safe for concurrent
// use.
type TokenBucket struct {
	clock Clock
	lim   *rate.Limiter
}

// NewTokenBucket returns a full bucket. perSecond must be > 0 and burst ≥ 1
// (EINVALID otherwise); clock nil means SystemClock.
func NewTokenBucket(perSecond float64, burst int, clock Clock) (*TokenBucket, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 0) || burst < 1 {
		return nil, forecast.Errorf(forecast.EINVALID, "rate limit needs requests per second > 0 and burst ≥ 1, got %v and %d", perSecond, burst)
	}
	if clock == nil {
		clock = SystemClock{}
	}
	return &TokenBucket{clock: clock, lim: rate.NewLimiter(rate.Limit(perSecond), burst)}, nil
}

// Wait takes a token, sleeping until one is available. When ctx ends
// first it returns ctx's error and gives the token back.
func (b *TokenBucket) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := b.clock.Now()
	r := b.lim.ReserveN(now, 1) // always OK: burst ≥ 1
	wait := r.DelayFrom(now)
	if wait == 0 {
		return nil
	}
	if err := b.clock.Sleep(ctx, wait); err != nil {
		r.CancelAt(b.clock.Now())
		return err
	}
	return nil
}
