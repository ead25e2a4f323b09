package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/retry"
)

// Defaults of Config.
const (
	DefaultInterval      = 15 * time.Minute
	DefaultBackfill      = 7 * 24 * time.Hour
	DefaultCallTimeout   = time.Minute
	DefaultPerSecond     = 1.0
	DefaultBurst         = 1
	DefaultAttempts      = 4
	DefaultBackoff       = 2 * time.Second
	DefaultMaxBackoff    = time.Minute
	DefaultMaxRetryAfter = 10 * time.Minute
)

// Rate is the request rate allowed to one source: a token bucket that
// gains PerSecond tokens a second and holds up to Burst.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Retry bounds the retries of one request. Only EUNAVAILABLE answers (rate
// limited, server errors, timeouts) are retried.
type Retry struct {
	// Attempts is the number of tries of one request, the first included.
	Attempts int
	// Backoff is the pause before the first retry; it doubles up to
	// MaxBackoff, and each pause is drawn from [pause/2, pause) (jitter).
	Backoff, MaxBackoff time.Duration
	// A Retry-After answer sets the pause instead; one longer than
	// MaxRetryAfter ends the round for the feed (it resumes next round).
	MaxRetryAfter time.Duration
}

// Config configures a Poller. Zero durations take the defaults above.
type Config struct {
	Sink  Sink   // required
	Feeds []Feed // required; each (zone, signal) once
	// Rates are the rate limits by Source.Name(); a source without one
	// gets DefaultPerSecond and DefaultBurst. Feeds of sources with the
	// same name share the limit.
	Rates map[string]Rate
	// Interval is the pause between two rounds of Run.
	Interval time.Duration
	// Backfill is how far back a feed starts when the Sink holds nothing
	// for it (capped by the source's history).
	Backfill time.Duration
	// CallTimeout bounds one Fetch (a login included).
	CallTimeout time.Duration
	Retry       Retry
	Clock       Clock          // nil: SystemClock
	Jitter      func() float64 // in [0, 1); nil: math/rand/v2
	Metrics     *Metrics       // nil: none
	Logger      *slog.Logger   // nil: discard
}

// FeedStatus is the state of one feed.
type FeedStatus struct {
	Source    string
	Zone      forecast.Zone
	Signal    forecast.Signal
	Latest    time.Time // start of the latest stored hour; zero when none is known
	LastOK    time.Time // end of the last round without error; zero before
	LastError string    // the error of the last round; "" when it succeeded
}

// Poller keeps its feeds' observed series up to date. Each round reads the
// latest stored hour of a feed from the Sink and fetches the complete hours
// after it up to the current hour (exclusive), in chunks the source allows,
// so it resumes where it stopped after a restart or a failure. Sources are
// polled concurrently, the feeds of one source one after another under its
// rate limit.
type Poller struct {
	cfg    Config
	log    *slog.Logger
	groups []*group

	mu     sync.Mutex
	status []FeedStatus // indexed like cfg.Feeds
}

// group is the feeds of one source name and their rate limit.
type group struct {
	name   string
	bucket *TokenBucket
	feeds  []int // indexes into cfg.Feeds
}

// New validates cfg, fills the defaults and returns a Poller; it makes no
// call. Errors are EINVALID.
func New(cfg Config) (*Poller, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Poller{cfg: cfg, log: cfg.Logger, status: make([]FeedStatus, len(cfg.Feeds))}
	byName := map[string]*group{}
	for i, f := range cfg.Feeds {
		name := f.Source.Name()
		g := byName[name]
		if g == nil {
			r, ok := cfg.Rates[name]
			if !ok {
				r = Rate{PerSecond: DefaultPerSecond, Burst: DefaultBurst}
			}
			b, err := NewTokenBucket(r.PerSecond, r.Burst, cfg.Clock)
			if err != nil {
				return nil, forecast.FieldErrorf(forecast.EINVALID, "rates", "ingest: source %s: %s", name, forecast.ErrorMessage(err))
			}
			g = &group{name: name, bucket: b}
			byName[name] = g
			p.groups = append(p.groups, g)
		}
		g.feeds = append(g.feeds, i)
		p.status[i] = FeedStatus{Source: name, Zone: f.Zone, Signal: f.Signal}
	}
	for name := range cfg.Rates {
		if byName[name] == nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "rates", "ingest: rate for source %q, which no feed uses", name)
		}
	}
	return p, nil
}

func (c *Config) fill() error {
	bad := func(field, format string, args ...any) error {
		return forecast.FieldErrorf(forecast.EINVALID, field, "ingest: "+format, args...)
	}
	if c.Sink == nil {
		return bad("sink", "a Sink is required")
	}
	if len(c.Feeds) == 0 {
		return bad("feeds", "at least one feed is required")
	}
	type key struct {
		z forecast.Zone
		s forecast.Signal
	}
	seen := map[key]string{}
	for i, f := range c.Feeds {
		if f.Source == nil || f.Source.Name() == "" {
			return bad("feeds", "feed %d has no (named) source", i)
		}
		if z, err := forecast.ParseZone(string(f.Zone)); err != nil || z != f.Zone {
			return bad("feeds", "feed %d: zone %q is not an upper-case zone id", i, f.Zone)
		}
		if !validSignal(f.Signal) {
			return bad("feeds", "feed %d: signal %q is not one of lifecycle, direct, marginal", i, f.Signal)
		}
		k := key{f.Zone, f.Signal}
		if prev, dup := seen[k]; dup {
			return bad("feeds", "zone %s signal %s is fed by both %s and %s", f.Zone, f.Signal, prev, f.Source.Name())
		}
		seen[k] = f.Source.Name()
	}
	for _, d := range []struct {
		field string
		v     *time.Duration
		def   time.Duration
	}{
		{"interval", &c.Interval, DefaultInterval},
		{"backfill", &c.Backfill, DefaultBackfill},
		{"call_timeout", &c.CallTimeout, DefaultCallTimeout},
		{"retry.backoff", &c.Retry.Backoff, DefaultBackoff},
		{"retry.max_backoff", &c.Retry.MaxBackoff, DefaultMaxBackoff},
		{"retry.max_retry_after", &c.Retry.MaxRetryAfter, DefaultMaxRetryAfter},
	} {
		if *d.v < 0 {
			return bad(d.field, "%s must be ≥ 0, got %v", d.field, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	c.Retry.MaxBackoff = max(c.Retry.MaxBackoff, c.Retry.Backoff)
	if c.Retry.Attempts < 0 {
		return bad("retry.attempts", "attempts must be ≥ 0, got %d", c.Retry.Attempts)
	}
	if c.Retry.Attempts == 0 {
		c.Retry.Attempts = DefaultAttempts
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Jitter == nil {
		c.Jitter = rand.Float64
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run makes a round (see Poll) right away, so that every feed resumes from
// its latest stored hour, then one every Interval, until ctx ends; it
// returns nil then, after its goroutines have ended. Failures are logged,
// counted and retried next round.
func (p *Poller) Run(ctx context.Context) error {
	for {
		_ = p.Poll(ctx) // failures are logged per feed
		if err := p.cfg.Clock.Sleep(ctx, p.cfg.Interval); err != nil {
			return nil
		}
	}
}

// Poll makes one round: every feed is brought up to the current hour. It
// returns the feeds' errors joined (nil when all succeeded) once every
// feed is done.
func (p *Poller) Poll(ctx context.Context) error {
	errs := make([]error, len(p.groups))
	var wg sync.WaitGroup
	for i, g := range p.groups {
		wg.Go(func() { errs[i] = p.pollGroup(ctx, g) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Status returns the state of every feed, in the order of Config.Feeds.
func (p *Poller) Status() []FeedStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.status)
}

func (p *Poller) pollGroup(ctx context.Context, g *group) error {
	var errs []error
	for _, i := range g.feeds {
		if ctx.Err() != nil {
			break
		}
		f := p.cfg.Feeds[i]
		err := p.sync(ctx, g, i)
		p.mu.Lock()
		if err != nil {
			p.status[i].LastError = err.Error()
		} else {
			p.status[i].LastError, p.status[i].LastOK = "", p.cfg.Clock.Now()
		}
		p.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			p.log.LogAttrs(ctx, slog.LevelWarn, "ingest: feed not brought up to date; it resumes from the latest stored hour next round",
				feedAttrs(f, slog.Any("err", err))...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s %s: %w", f.Source.Name(), f.Zone, f.Signal, err))
		}
	}
	return errors.Join(errs...)
}

func feedAttrs(f Feed, more ...slog.Attr) []slog.Attr {
	return append([]slog.Attr{slog.String("source", f.Source.Name()), slog.String("zone", string(f.Zone)), slog.String("signal", string(f.Signal))}, more...)
}

// sync brings feed i up to the current hour.
func (p *Poller) sync(ctx context.Context, g *group, i int) error {
	f := p.cfg.Feeds[i]
	latest, ok, err := p.cfg.Sink.Latest(ctx, f.Zone, f.Signal)
	if err != nil {
		return err
	}
	if ok {
		p.setLatest(i, latest)
	}
	end := forecast.HourFloor(p.cfg.Clock.Now())
	from := p.start(ctx, f, latest, ok, end)
	lim := f.Source.Limits()
	span := lim.MaxSpan.Truncate(forecast.Hour)
	if lim.MaxSpan > 0 && span == 0 {
		span = forecast.Hour
	}
	for from.Before(end) {
		to := end
		if span > 0 && from.Add(span).Before(end) {
			to = from.Add(span)
		}
		b, err := p.fetch(ctx, g, f, from, to)
		if err != nil {
			return err
		}
		pts, err := p.hourly(ctx, f, b, from, to)
		if err != nil {
			return err
		}
		if len(pts) > 0 {
			if err := p.cfg.Sink.Upsert(ctx, f.Zone, f.Signal, pts); err != nil {
				return err
			}
			last := pts[len(pts)-1].Time
			p.cfg.Metrics.stored(f, len(pts), last)
			p.setLatest(i, last)
		}
		from = to
	}
	return nil
}

// start returns the first hour to fetch for f: the one after the latest
// stored hour, or Backfill before end when none is stored; not earlier than
// the source's history reaches (the hours before stay a gap, logged).
func (p *Poller) start(ctx context.Context, f Feed, latest time.Time, ok bool, end time.Time) time.Time {
	from := end.Add(-p.cfg.Backfill).Truncate(forecast.Hour)
	if ok {
		from = forecast.HourFloor(latest).Add(forecast.Hour)
	}
	lim := f.Source.Limits()
	if lim.History <= 0 {
		return from
	}
	earliest := ceilHour(end.Add(-lim.History))
	if !from.Before(earliest) {
		return from
	}
	if ok {
		hours := int(earliest.Sub(from) / forecast.Hour)
		p.log.LogAttrs(ctx, slog.LevelWarn, "ingest: the source no longer serves the hours after the latest stored one; they stay a gap",
			feedAttrs(f, slog.Time("gap_from", from), slog.Time("gap_to", earliest), slog.Int("hours", hours), slog.Duration("source_history", lim.History))...)
		p.cfg.Metrics.gap(f, hours)
	} else {
		p.log.LogAttrs(ctx, slog.LevelInfo, "ingest: backfill limited by the source's history",
			feedAttrs(f, slog.Time("from", earliest), slog.Duration("source_history", lim.History))...)
	}
	return earliest
}

func (p *Poller) setLatest(i int, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.status[i].Latest) {
		p.status[i].Latest = t.UTC()
	}
}

func ceilHour(t time.Time) time.Time {
	h := forecast.HourFloor(t)
	if h.Before(t) {
		return h.Add(forecast.Hour)
	}
	return h
}

// fetch asks the source for [from, to), under its rate limit, retrying
// EUNAVAILABLE answers as cfg.Retry allows.
func (p *Poller) fetch(ctx context.Context, g *group, f Feed, from, to time.Time) (Batch, error) {
	rc := p.cfg.Retry
	var b Batch
	pol := retry.Policy{
		Attempts: rc.Attempts, Base: rc.Backoff, Cap: rc.MaxBackoff, Jitter: 0.5, Rand: p.cfg.Jitter,
		Retryable: func(err error) bool { return forecast.ErrorCode(err) == forecast.EUNAVAILABLE },
		Wait: func(err error, pause time.Duration) (time.Duration, error) {
			ra, ok := RetryAfter(err)
			if !ok {
				return pause, nil
			}
			if ra > rc.MaxRetryAfter {
				return 0, &forecast.Error{Code: forecast.EUNAVAILABLE,
					Message: fmt.Sprintf("%s asks to wait %v, longer than %v: %s", g.name, ra, rc.MaxRetryAfter, forecast.ErrorMessage(err)), Err: err}
			}
			return ra, nil
		},
		OnRetry: func(attempt int, pause time.Duration, err error) {
			p.log.LogAttrs(ctx, slog.LevelInfo, "ingest: retrying upstream request",
				feedAttrs(f, slog.Int("attempt", attempt), slog.Duration("pause", pause), slog.Any("err", err))...)
			p.cfg.Metrics.retry(g.name)
		},
		GiveUp: func(attempts int, err error) error { return giveUp(g.name, attempts, err) },
		Sleep:  p.cfg.Clock.Sleep,
	}
	err := pol.Do(ctx, func(ctx context.Context) error {
		if err := g.bucket.Wait(ctx); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
		t0 := time.Now()
		var err error
		b, err = f.Source.Fetch(cctx, f.Zone, f.Signal, from, to)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("%s: no answer within %v", g.name, p.cfg.CallTimeout), Err: err}
		}
		out := outcome(err)
		if ctx.Err() != nil {
			out = OutcomeCanceled
		}
		p.cfg.Metrics.request(g.name, out, time.Since(t0))
		return err
	})
	if err != nil {
		return Batch{}, err
	}
	return b, nil
}

func giveUp(source string, attempts int, err error) error {
	return &forecast.Error{Code: forecast.EUNAVAILABLE,
		Message: fmt.Sprintf("%s: gave up after %d attempts: %s", source, attempts, forecast.ErrorMessage(err)), Err: err}
}

// hourly turns a source's answer for [from, to) into the hourly points to
// store, counting what it drops.
func (p *Poller) hourly(ctx context.Context, f Feed, b Batch, from, to time.Time) ([]Point, error) {
	name := f.Source.Name()
	if b.Period <= 0 || b.Period > forecast.Hour || forecast.Hour%b.Period != 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "%s answered points covering %v each; want a divisor of an hour", name, b.Period)
	}
	in, outside := Clip(b.Points, from, to)
	in, dups, conflicts := Normalize(in)
	dups += b.Duplicates
	conflicts += b.Conflicts
	hours := Hourly(in, b.Period)
	complete := make(map[time.Time]bool, len(hours))
	for _, h := range hours {
		complete[h.Time] = true
	}
	partial := 0
	for _, pt := range in {
		if !complete[pt.Time.Truncate(forecast.Hour)] {
			partial++
		}
	}
	m := p.cfg.Metrics
	m.drop(name, DropDuplicate, dups)
	m.drop(name, DropConflict, conflicts)
	m.drop(name, DropMissing, b.Missing)
	m.drop(name, DropPartial, partial)
	m.drop(name, DropOutside, outside)
	level := slog.LevelDebug
	if conflicts > 0 {
		level = slog.LevelWarn // an upstream revised values within one answer
	}
	p.log.LogAttrs(ctx, level, "ingest: fetched",
		feedAttrs(f, slog.Time("from", from), slog.Time("to", to), slog.Int("points", len(b.Points)), slog.Int("hours", len(hours)),
			slog.Int("duplicates", dups), slog.Int("conflicts", conflicts), slog.Int("missing", b.Missing),
			slog.Int("in_incomplete_hours", partial), slog.Int("out_of_range", outside))...)
	return hours, nil
}
