// Package guard keeps a burst of identical scheduling requests from all
// landing in one zone (a "black hole"): over a sliding window it counts the
// decisions each zone received, and Admit steers a decision away from a
// zone whose share of the window's decisions is over a cap, to the best
// alternative under it.
//
// The window is a ring of buckets: a decision costs O(1) amortised (one
// map increment; each count leaves the window once, when its bucket
// expires), and memory is bounded by Buckets × the zones decided within the
// window.
package guard

import (
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Defaults of a Config.
const (
	DefaultWindow   = time.Minute
	DefaultMinCount = 10
	DefaultBuckets  = 60
	maxBuckets      = 3600
)

// Config configures a Guard.
type Config struct {
	// Share is the cap: the largest share of the window's decisions a zone
	// may hold and still receive the next one, in (0, 1); 0 turns the
	// guard off.
	Share float64
	// Window is how far back decisions count; default DefaultWindow.
	Window time.Duration
	// MinCount is how many decisions of the window a zone must hold before
	// the cap applies to it, so a lone request is never diverted; default
	// DefaultMinCount.
	MinCount int
	// Buckets is the resolution of the window: decisions expire Window /
	// Buckets at a time; default DefaultBuckets.
	Buckets int
	// Now reads the clock; default time.Now.
	Now func() time.Time
}

// Validate checks c: Share in [0, 1), Window, MinCount and Buckets not
// negative, Window at least a microsecond per bucket. Errors are EINVALID
// naming the field.
func (c Config) Validate() error {
	switch {
	case !(c.Share >= 0 && c.Share < 1):
		return forecast.FieldErrorf(forecast.EINVALID, "zone_cap_share", "zone cap share must be in [0, 1), got %v", c.Share)
	case c.Window < 0:
		return forecast.FieldErrorf(forecast.EINVALID, "zone_cap_window", "zone cap window must not be negative, got %v", c.Window)
	case c.MinCount < 0:
		return forecast.FieldErrorf(forecast.EINVALID, "zone_cap_min", "zone cap minimum count must not be negative, got %d", c.MinCount)
	case c.Buckets < 0 || c.Buckets > maxBuckets:
		return forecast.FieldErrorf(forecast.EINVALID, "zone_cap_buckets", "zone cap buckets must be between 0 and %d, got %d", maxBuckets, c.Buckets)
	}
	c = c.withDefaults()
	if c.Window/time.Duration(c.Buckets) < time.Microsecond {
		return forecast.FieldErrorf(forecast.EINVALID, "zone_cap_window", "zone cap window %v is too short for %d buckets", c.Window, c.Buckets)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinCount == 0 {
		c.MinCount = DefaultMinCount
	}
	if c.Buckets == 0 {
		c.Buckets = DefaultBuckets
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Capped is a zone a decision was steered away from, with its share of the
// window's decisions at that moment.
type Capped struct {
	Zone  forecast.Zone
	Share float64
}

// Guard counts decisions per zone over a sliding window. Safe for
// concurrent use.
type Guard struct {
	cfg   Config
	width int64 // nanoseconds per bucket

	mu      sync.Mutex
	ring    []bucket
	started bool
	newest  int64 // the bucket number (time / width) of the newest bucket
	counts  map[forecast.Zone]int
	total   int
}

type bucket struct {
	counts map[forecast.Zone]int
	n      int
}

// New validates cfg and returns a Guard, or nil when cfg.Share is 0 (the
// guard is off; a nil *Guard admits every first choice).
func New(cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Share == 0 {
		return nil, nil
	}
	cfg = cfg.withDefaults()
	return &Guard{
		cfg:    cfg,
		width:  int64(cfg.Window) / int64(cfg.Buckets),
		ring:   make([]bucket, cfg.Buckets),
		counts: make(map[forecast.Zone]int),
	}, nil
}

// Config returns the guard's configuration, defaults filled in.
func (g *Guard) Config() Config { return g.cfg }

// Admit picks the zone a decision goes to from ranked (the feasible zones,
// best first) and records it: the first zone that is not over the cap, or
// ranked[0] when every zone is. A zone is over the cap when it holds at
// least MinCount of the window's decisions and more than Share of them.
// Admit returns the index of the pick and the better-ranked zones it
// skipped (nil when it picked ranked[0]). A nil Guard picks ranked[0] and
// records nothing; so does an empty ranked (it returns -1).
func (g *Guard) Admit(ranked []forecast.Zone) (int, []Capped) {
	if len(ranked) == 0 {
		return -1, nil
	}
	if g == nil {
		return 0, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advance(g.cfg.Now())
	pick := 0
	var capped []Capped
	for i, z := range ranked {
		n := g.counts[z]
		if n < g.cfg.MinCount || float64(n) <= g.cfg.Share*float64(g.total) {
			pick = i
			break
		}
		capped = append(capped, Capped{Zone: z, Share: float64(n) / float64(g.total)})
		if i == len(ranked)-1 { // every zone is over the cap: keep the best
			pick, capped = 0, nil
		}
	}
	z := ranked[pick]
	b := g.slot(g.newest)
	if b.counts == nil {
		b.counts = make(map[forecast.Zone]int)
	}
	b.counts[z]++
	b.n++
	g.counts[z]++
	g.total++
	return pick, capped
}

// Counts returns each zone's decisions in the window and their total.
func (g *Guard) Counts() (map[forecast.Zone]int, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.advance(g.cfg.Now())
	out := make(map[forecast.Zone]int, len(g.counts))
	for z, n := range g.counts {
		out[z] = n
	}
	return out, g.total
}

// advance expires the buckets that fell out of the window by now. A clock
// that goes back counts into the newest bucket.
func (g *Guard) advance(now time.Time) {
	cur := floorDiv(now.UnixNano(), g.width)
	if !g.started {
		g.started, g.newest = true, cur
		return
	}
	if cur <= g.newest {
		return
	}
	if cur-g.newest >= int64(len(g.ring)) {
		for i := range g.ring {
			clear(g.ring[i].counts)
			g.ring[i].n = 0
		}
		clear(g.counts)
		g.total, g.newest = 0, cur
		return
	}
	for g.newest < cur {
		g.newest++
		b := g.slot(g.newest)
		for z, n := range b.counts {
			if g.counts[z] -= n; g.counts[z] <= 0 {
				delete(g.counts, z)
			}
		}
		g.total -= b.n
		clear(b.counts)
		b.n = 0
	}
}

// slot is the bucket of bucket number k.
func (g *Guard) slot(k int64) *bucket {
	n := int64(len(g.ring))
	return &g.ring[(k%n+n)%n]
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
