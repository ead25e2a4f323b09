// Package breaker is a consecutive-failure circuit breaker for one
// upstream. Closed, it lets every call through and counts consecutive
// failures; after Failures of them it opens and fails calls fast for
// Cooldown; then it half-opens and lets one probe call through: success
// closes it, failure opens it again for another Cooldown.
package breaker

import (
	"sync"
	"time"
)

// State is a breaker's state.
type State int

// The states; their values are what a state gauge reports.
const (
	Closed   State = 0
	HalfOpen State = 1
	Open     State = 2
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half-open"
	case Open:
		return "open"
	}
	return "unknown"
}

// Defaults.
const (
	DefaultFailures = 5
	DefaultCooldown = 10 * time.Second
)

// Config configures a Breaker.
type Config struct {
	Failures int              // consecutive failures that open the breaker; default DefaultFailures
	Cooldown time.Duration    // how long it stays open before a probe; default DefaultCooldown
	Now      func() time.Time // wall clock; default time.Now
	// OnChange, when set, is called with each new state, in order, under
	// the breaker's lock: it must be quick and must not call the breaker.
	OnChange func(State)
}

// Breaker is safe for concurrent use.
type Breaker struct {
	cfg      Config
	mu       sync.Mutex
	state    State
	fails    int
	openedAt time.Time
	probing  bool // a half-open probe is in flight
}

// New returns a closed Breaker, filling cfg's defaults.
func New(cfg Config) *Breaker {
	if cfg.Failures <= 0 {
		cfg.Failures = DefaultFailures
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCooldown
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg}
}

// Outcome is what a call reports when it ends.
type Outcome int

// Outcomes of a call.
const (
	Success Outcome = iota // the upstream answered well
	Failure                // the upstream failed: counts towards opening
	Ignore                 // nothing learnt about the upstream (the caller gave up)
)

// Allow asks to make one call. When the breaker lets it through, done must
// be called exactly once with the call's outcome. When the breaker is open
// (or half-open with its probe in flight) ok is false and done is nil.
func (b *Breaker) Allow() (done func(Outcome), ok bool) {
	b.mu.Lock()
	switch b.state {
	case Open:
		if b.cfg.Now().Sub(b.openedAt) < b.cfg.Cooldown {
			b.mu.Unlock()
			return nil, false
		}
		b.state, b.probing = HalfOpen, true
		b.changed()
	case HalfOpen:
		if b.probing {
			b.mu.Unlock()
			return nil, false
		}
		b.probing = true
	}
	probe := b.state == HalfOpen
	b.mu.Unlock()
	var once sync.Once
	return func(o Outcome) { once.Do(func() { b.record(o, probe) }) }, true
}

func (b *Breaker) record(o Outcome, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch o {
	case Success:
		b.fails = 0
		if b.state != Closed && probe {
			b.state = Closed
			b.changed()
		}
	case Failure:
		switch {
		case probe && b.state == HalfOpen:
			b.state, b.openedAt = Open, b.cfg.Now()
			b.changed()
		case b.state == Closed:
			b.fails++
			if b.fails >= b.cfg.Failures {
				b.state, b.openedAt, b.fails = Open, b.cfg.Now(), 0
				b.changed()
			}
		}
	}
}

// changed reports the new state; b.mu is held.
func (b *Breaker) changed() {
	if b.cfg.OnChange != nil {
		b.cfg.OnChange(b.state)
	}
}

// State returns the current state. An open breaker whose cool-down has
// passed still reports Open until the next Allow turns it half-open.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}
