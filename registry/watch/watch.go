// Package watch is the plumbing of live promotion: a Watcher hands the
// registry's alias table (every model's aliases and the versions they point
// at) to a callback at start and again whenever it changes, so a gateway
// can load the new champion without a restart.
//
// Setting an alias bumps no timestamp in MLflow's schema, so the Watcher
// reads the alias table itself. When the store is a registry.Notifier
// (PostgreSQL LISTEN/NOTIFY, the embedded store) it re-reads on every
// notification and polls only as a safety net, every 10 × Interval; when
// the store cannot notify (ENOTFOUND, e.g. the trigger is not installed) or
// the notification channel closes, it polls every Interval and tries the
// notifier again every 10 × Interval. A store that can never notify
// (registry.ErrCannotNotify: CrateDB, which has no LISTEN/NOTIFY) is
// polled every Interval and not asked again.
package watch

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultTimeout  = 10 * time.Second
)

// slowFactor stretches Interval for the safety-net poll and the notifier
// retry.
const slowFactor = 10

// Config configures a Watcher.
type Config struct {
	// Interval between two reads of the alias table when the store cannot
	// notify. Default DefaultInterval.
	Interval time.Duration
	// Timeout bounds each AliasTargets call. Default DefaultTimeout.
	Timeout time.Duration
	// Logger receives failed reads and notifier changes. Default: none.
	Logger *slog.Logger
	// OnRead, when set, is called after every read of the alias table with
	// its error (nil on success), so a caller can report the registry's
	// health (e.g. in /readyz) while the last snapshot keeps serving.
	OnRead func(err error)
}

// Watcher watches one store's aliases. Its Run may be called more than
// once, one call at a time or concurrently; each call watches on its own.
type Watcher struct {
	store registry.Store
	cfg   Config
}

// New returns a Watcher over store, filling cfg's defaults. It makes no
// call: Run does.
func New(store registry.Store, cfg Config) *Watcher {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{store: store, cfg: cfg}
}

// Run calls fn with the full alias table (sorted by model name, then
// alias) once it has read it, then again each time it differs from the
// table fn last got; fn runs on Run's goroutine, one call at a time, and
// owns the slice. A failed read is logged and retried after Interval. Run
// returns nil when ctx ends, and EINVALID without a store or fn.
func (w *Watcher) Run(ctx context.Context, fn func(snapshot []registry.AliasTarget)) error {
	if w.store == nil || fn == nil {
		return forecast.Errorf(forecast.EINVALID, "watch: a store and a callback are required")
	}
	r := &run{Watcher: w}
	r.notifier, _ = w.store.(registry.Notifier)
	defer r.unsubscribe()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if r.notifier != nil && r.notify == nil && !time.Now().Before(r.retryAt) {
			r.subscribe(ctx)
		}
		wait := r.poll(ctx, fn)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case _, ok := <-r.notify:
			if !ok {
				w.cfg.Logger.Warn("registry alias notifications stopped; polling", "interval", w.cfg.Interval)
				r.unsubscribe()
				r.retryAt = time.Now().Add(w.slow())
			}
		}
	}
}

// slow is the safety-net poll interval and the notifier retry interval.
func (w *Watcher) slow() time.Duration { return slowFactor * w.cfg.Interval }

// run is the state of one Run call.
type run struct {
	*Watcher
	notifier registry.Notifier
	notify   <-chan struct{}    // nil: not subscribed
	stop     context.CancelFunc // ends the subscription
	retryAt  time.Time          // when to try the notifier again

	last      []registry.AliasTarget
	delivered bool // fn has been called at least once
	failures  int  // consecutive failed reads
}

// subscribe asks the notifier for a channel. The subscription is made
// before the next read, so no change between the read and the
// subscription is missed.
func (r *run) subscribe(ctx context.Context) {
	sub, cancel := context.WithCancel(ctx)
	ch, err := r.notifier.WatchAliases(sub)
	if errors.Is(err, registry.ErrCannotNotify) {
		cancel()
		r.notifier = nil
		r.cfg.Logger.Info("registry cannot notify alias changes; polling", "interval", r.cfg.Interval)
		return
	}
	if err != nil {
		cancel()
		r.retryAt = time.Now().Add(r.slow())
		level := slog.LevelWarn
		if forecast.ErrorCode(err) == forecast.ENOTFOUND || ctx.Err() != nil {
			level = slog.LevelInfo
		}
		r.cfg.Logger.Log(ctx, level, "registry alias notifications unavailable; polling", "interval", r.cfg.Interval, "retry_in", r.slow(), "err", err)
		return
	}
	r.notify, r.stop = ch, cancel
	r.cfg.Logger.Info("watching registry aliases through notifications", "safety_poll", r.slow())
}

func (r *run) unsubscribe() {
	if r.stop != nil {
		r.stop()
	}
	r.notify, r.stop = nil, nil
}

// poll reads the alias table, calls fn when it changed, and returns how
// long to wait before the next read if no notification comes.
func (r *run) poll(ctx context.Context, fn func([]registry.AliasTarget)) time.Duration {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	snap, err := r.store.AliasTargets(rctx)
	cancel()
	if r.cfg.OnRead != nil && ctx.Err() == nil {
		r.cfg.OnRead(err)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.failures++
			r.cfg.Logger.Warn("cannot read registry aliases; retrying", "retry_in", r.cfg.Interval, "failures", r.failures, "err", err)
		}
		return r.cfg.Interval
	}
	if r.failures > 0 {
		r.cfg.Logger.Info("registry aliases readable again", "failures", r.failures)
		r.failures = 0
	}
	snap = slices.Clone(snap)
	slices.SortFunc(snap, compareTargets)
	if !r.delivered || !slices.Equal(snap, r.last) {
		r.last, r.delivered = snap, true
		fn(slices.Clone(snap))
	}
	if r.notify != nil {
		return r.slow()
	}
	return r.cfg.Interval
}

func compareTargets(a, b registry.AliasTarget) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Alias, b.Alias), cmp.Compare(a.Version, b.Version))
}
