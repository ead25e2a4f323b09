// Package cache keeps the current forecast of each (zone, signal), keyed by
// its issue hour (the hour floor of the clock's now). A background loop
// recomputes every known key when the hour turns, so requests find the
// forecast ready; concurrent misses for the same key and hour share one
// computation, which runs detached from any single caller's cancellation.
package cache

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/tracing"
)

// Key names one cached forecast.
type Key struct {
	Zone   forecast.Zone
	Signal forecast.Signal
}

// Compute produces the forecast of key issued at issue (hour-aligned UTC).
type Compute func(ctx context.Context, key Key, issue time.Time) (forecast.Forecast, error)

// Config configures a Cache.
type Config struct {
	Compute Compute               // required
	Now     func() time.Time      // required: the clock
	Logger  *slog.Logger          // nil: discard
	Metrics prometheus.Registerer // nil: register nothing
	// Degraded reports whether a forecast came from a fallback step because
	// a better one failed; such entries are served, and recomputed until
	// they are not: FirstRetry after, then twice as long after each retry
	// that is degraded again, up to RetryInterval. nil: never.
	Degraded func(forecast.Forecast) bool
	// ComputeTimeout bounds a computation that no caller deadline bounds
	// (background refreshes, callers without a deadline). Default 30s.
	ComputeTimeout time.Duration
	// RetryInterval is the longest wait before a degraded entry is
	// recomputed. Default 1m.
	RetryInterval time.Duration
	// FirstRetry is the wait before a degraded entry's first recomputation
	// (a model that has just come up — a pod Ready a moment before its
	// Service routes to it — is used within seconds, not a minute).
	// Default DefaultFirstRetry, at most RetryInterval.
	FirstRetry time.Duration
	// Poll is the longest the refresh loop sleeps before it reads the clock
	// again, so that a clock that jumps is noticed. Default 1m.
	Poll time.Duration
	// Workers bounds concurrent background computations. Default 8.
	Workers int
}

// Cache is safe for concurrent use. Start starts its refresh loop; Close
// stops it and waits for every goroutine it started.
type Cache struct {
	cfg     Config
	base    context.Context // parent of every computation; canceled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.RWMutex
	entries map[Key]*entry
	flights map[flightKey]*flight
	started bool
	wake    chan struct{} // a degraded entry is due sooner than the loop sleeps

	hits, misses, refreshErrors, computeErrors prometheus.Counter
}

type entry struct {
	issue    time.Time
	fc       forecast.Forecast
	degraded bool
	retryAt  time.Time
	backoff  time.Duration // the wait before retryAt: doubles on each degraded retry
}

// DefaultFirstRetry is Config.FirstRetry's default.
const DefaultFirstRetry = 5 * time.Second

type flightKey struct {
	Key
	issue time.Time
}

type flight struct {
	done chan struct{}
	fc   forecast.Forecast
	err  error
}

// New validates cfg, fills defaults and returns a Cache.
func New(cfg Config) (*Cache, error) {
	if cfg.Compute == nil || cfg.Now == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "cache: Compute and Now are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ComputeTimeout <= 0 {
		cfg.ComputeTimeout = 30 * time.Second
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = time.Minute
	}
	if cfg.FirstRetry <= 0 {
		cfg.FirstRetry = DefaultFirstRetry
	}
	cfg.FirstRetry = min(cfg.FirstRetry, cfg.RetryInterval)
	if cfg.Poll <= 0 {
		cfg.Poll = time.Minute
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	base, cancel := context.WithCancel(context.Background())
	c := &Cache{
		cfg: cfg, base: base, cancel: cancel,
		entries: make(map[Key]*entry),
		flights: make(map[flightKey]*flight),
		wake:    make(chan struct{}, 1),
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carbongate_forecast_cache_hits_total", Help: "Forecast cache lookups answered from the cache."}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carbongate_forecast_cache_misses_total", Help: "Forecast cache lookups that had to wait for a computation."}),
		refreshErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carbongate_forecast_cache_refresh_errors_total", Help: "Background forecast refreshes that failed."}),
		computeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carbongate_forecast_cache_compute_errors_total", Help: "Forecast computations on a miss that failed."}),
	}
	if cfg.Metrics != nil {
		for _, col := range []prometheus.Collector{c.hits, c.misses, c.refreshErrors, c.computeErrors} {
			if err := cfg.Metrics.Register(col); err != nil {
				cancel()
				return nil, err
			}
		}
	}
	return c, nil
}

// Start starts the refresh loop: when the clock's hour turns, every key
// looked up so far is recomputed for the new hour; degraded entries are
// recomputed as Degraded says. Start is a no-op after the first call.
func (c *Cache) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.base.Err() != nil {
		return
	}
	c.started = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.loop()
	}()
}

// Close stops the refresh loop, cancels running computations and waits for
// every goroutine of the cache to end. Lookups after Close fail.
func (c *Cache) Close() error {
	// Under the lock: join checks for Close and adds to the wait group
	// under it, so no computation starts once Wait may have returned.
	c.mu.Lock()
	c.cancel()
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// Peek returns the forecast of key for the current hour when it is cached,
// without computing anything. A found entry counts as a hit; a missing one
// counts nothing (the Get that follows counts the miss).
func (c *Cache) Peek(key Key) (forecast.Forecast, bool) {
	issue := forecast.HourFloor(c.cfg.Now())
	c.mu.RLock()
	e := c.entries[key]
	c.mu.RUnlock()
	if e != nil && e.issue.Equal(issue) {
		c.hits.Inc()
		return e.fc, true
	}
	return forecast.Forecast{}, false
}

// Get returns the forecast of key for the current hour: from the cache, or
// by joining or starting its one computation. The computation runs until
// the latest deadline among ctx and ComputeTimeout, whichever applies, and
// is not canceled when ctx is; Get itself returns ctx's error when ctx ends
// first. Errors of the computation are returned as they are and not cached.
func (c *Cache) Get(ctx context.Context, key Key) (forecast.Forecast, error) {
	if fc, ok := c.Peek(key); ok {
		return fc, nil
	}
	c.misses.Inc()
	issue := forecast.HourFloor(c.cfg.Now())
	f, err := c.join(ctx, key, issue, false)
	if err != nil {
		return forecast.Forecast{}, err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return forecast.Forecast{}, ctx.Err()
	}
	if f.err != nil {
		return forecast.Forecast{}, f.err
	}
	return f.fc, nil
}

// join returns the running computation of key at issue, or starts one.
// background computations are bounded by ComputeTimeout only.
func (c *Cache) join(ctx context.Context, key Key, issue time.Time, background bool) (*flight, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base.Err() != nil {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "forecast cache is closed")
	}
	fk := flightKey{key, issue}
	if f := c.flights[fk]; f != nil {
		return f, nil
	}
	f := &flight{done: make(chan struct{})}
	c.flights[fk] = f
	// The computation outlives a caller that gives up, but keeps its
	// deadline: a request's budget bounds the work done on its behalf.
	deadline := time.Now().Add(c.cfg.ComputeTimeout) // context deadlines are wall time, whatever the clock
	if d, ok := ctx.Deadline(); ok && !background {
		deadline = d
	}
	// The first caller's span, if any, is the computation's parent.
	cctx, cancel := context.WithDeadline(tracing.Carry(c.base, ctx), deadline)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		fc, err := c.cfg.Compute(cctx, key, issue)
		c.finish(fk, f, fc, err, background)
	}()
	return f, nil
}

// finish records the outcome of a computation and releases its waiters.
func (c *Cache) finish(fk flightKey, f *flight, fc forecast.Forecast, err error, background bool) {
	f.fc, f.err = fc, err
	c.mu.Lock()
	delete(c.flights, fk)
	if err == nil {
		e := c.entries[fk.Key]
		if e == nil || !fk.issue.Before(e.issue) {
			ne := &entry{issue: fk.issue, fc: fc}
			if c.cfg.Degraded != nil && c.cfg.Degraded(fc) {
				ne.degraded, ne.backoff = true, c.cfg.FirstRetry
				if e != nil && e.degraded && e.issue.Equal(fk.issue) {
					ne.backoff = min(2*e.backoff, c.cfg.RetryInterval)
				}
				ne.retryAt = c.cfg.Now().Add(ne.backoff)
				select {
				case c.wake <- struct{}{}:
				default:
				}
			}
			c.entries[fk.Key] = ne
		}
	}
	c.mu.Unlock()
	close(f.done)
	if err != nil {
		if background {
			c.refreshErrors.Inc()
		} else {
			c.computeErrors.Inc()
		}
		c.cfg.Logger.Warn("forecast computation failed", "zone", fk.Zone, "signal", fk.Signal,
			"issued_at", fk.issue, "background", background, "error", err)
	}
}

// Warm computes the given keys for the current hour (those not cached yet)
// and waits for them. It returns the first error, after all have finished.
func (c *Cache) Warm(ctx context.Context, keys []Key) error {
	return c.run(ctx, keys, forecast.HourFloor(c.cfg.Now()), false)
}

// Refresh recomputes, for the current hour, every key whose entry is from
// an earlier hour or is degraded and due for a retry, and waits for them.
// The refresh loop calls it; tests may call it directly.
func (c *Cache) Refresh(ctx context.Context) error {
	now := c.cfg.Now()
	issue := forecast.HourFloor(now)
	var due []Key
	c.mu.RLock()
	for k, e := range c.entries {
		if e.issue.Before(issue) || e.degraded && !now.Before(e.retryAt) {
			due = append(due, k)
		}
	}
	c.mu.RUnlock()
	return c.run(ctx, due, issue, true)
}

// Recompute computes keys again for the current hour even when their
// entries are fresh (a model was promoted), and waits for them. Requests
// keep getting the old entries until the new ones are ready.
func (c *Cache) Recompute(ctx context.Context, keys []Key) error {
	return c.run(ctx, keys, forecast.HourFloor(c.cfg.Now()), true)
}

// run computes keys at issue with at most Workers at a time.
func (c *Cache) run(ctx context.Context, keys []Key, issue time.Time, force bool) error {
	sem := make(chan struct{}, c.cfg.Workers)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		if !force {
			c.mu.RLock()
			e := c.entries[k]
			c.mu.RUnlock()
			if e != nil && e.issue.Equal(issue) {
				continue
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		f, err := c.join(ctx, k, issue, true)
		if err != nil {
			<-sem
			errs[i] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			select {
			case <-f.done:
				errs[i] = f.err
			case <-ctx.Done():
				errs[i] = ctx.Err()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loop refreshes when the hour turns, until Close.
func (c *Cache) loop() {
	for {
		now := c.cfg.Now()
		wait := forecast.HourFloor(now).Add(forecast.Hour).Sub(now)
		c.mu.RLock()
		for _, e := range c.entries {
			if e.degraded {
				wait = min(wait, e.retryAt.Sub(now))
			}
		}
		c.mu.RUnlock()
		wait = max(min(wait, c.cfg.Poll), time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-c.base.Done():
			t.Stop()
			return
		case <-c.wake:
			t.Stop()
			continue
		case <-t.C:
		}
		if err := c.Refresh(c.base); err != nil && c.base.Err() == nil {
			c.cfg.Logger.Warn("forecast refresh failed", "error", err)
		}
	}
}

// Len returns the number of cached keys.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
