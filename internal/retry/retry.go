// Package retry calls an operation again after transient failures, with
// capped exponential backoff and jitter. It is the one retry loop of
// carbongate: the ingest poller, the backfill's model calls and writes,
// the gateway's remote model calls and carbonserve's start-up registry
// resolve all run through Policy.Do.
//
// Jitter is what keeps many callers apart: backfill shards (or gateway
// replicas) that fail on the same restarted server at the same moment would
// otherwise all come back together, after the same pauses. Each pause is
// drawn at random below its nominal value, from the process's
// automatically seeded source unless a test injects one.
//
// It imports only the standard library; the caller says which errors are
// worth another call (Policy.Retryable).
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// DefaultJitter is the random share of each pause when Policy.Jitter is 0:
// a pause is drawn from [d/2, d) ("equal jitter"), so a restarting server
// still gets at least half the nominal pause.
const DefaultJitter = 0.5

// Policy says how often and how long to wait between calls. The zero
// value retries every error without pause until ctx ends; set at least
// Attempts or Retryable and Base. A Policy is a value: copy it and change
// fields per caller. Do is safe for concurrent use when the hooks are.
type Policy struct {
	// Attempts is the number of calls at most, the first included; ≤ 0:
	// no bound (ctx, Retryable or Wait end the retries).
	Attempts int
	// Base is the nominal pause after the first failed call; it doubles
	// after each further failure up to Cap (Cap < Base: Base).
	Base, Cap time.Duration
	// Jitter is the random share of each pause, in (0, 1]: a nominal pause
	// d becomes one drawn uniformly from [d·(1−Jitter), d). 1 is full
	// jitter; 0 means DefaultJitter. Out of range values are clamped.
	Jitter float64
	// Retryable says whether a failed call is worth another; false ends
	// Do with the call's error as it is. nil: every error is.
	Retryable func(err error) bool
	// Wait, when set, sees each retryable error and the jittered pause
	// before it is taken, and returns the pause to take instead (a
	// server's Retry-After) or an error that ends Do.
	Wait func(err error, pause time.Duration) (time.Duration, error)
	// OnRetry, when set, is called before each pause with the number of
	// the call that failed (1-based), the pause and the error (logs,
	// metrics).
	OnRetry func(attempt int, pause time.Duration, err error)
	// GiveUp, when set, turns the last error into the one Do returns once
	// the retries are spent (Attempts reached, or ctx's deadline leaves no
	// room for the next pause). nil: the last error as it is.
	GiveUp func(attempts int, err error) error
	// Rand returns numbers in [0, 1) for the jitter. nil: math/rand/v2's
	// process-wide source. Tests inject a fixed one.
	Rand func() float64
	// Sleep waits d, or until ctx ends and then returns ctx's error.
	// nil: a timer. Tests inject one that records d.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do calls op until it succeeds, then returns nil. It stops early and
// returns:
//   - ctx's error once ctx has ended (during a call or a pause), whatever
//     the call returned;
//   - op's error as it is when Retryable rejects it;
//   - Wait's error when Wait returns one;
//   - GiveUp's result (default: op's last error) after Attempts calls, or
//     when ctx's deadline would fall within the next pause: a pause
//     the deadline cuts short only delays the same failure.
func (p Policy) Do(ctx context.Context, op func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p.Retryable != nil && !p.Retryable(err) {
			return err
		}
		if p.Attempts > 0 && attempt >= p.Attempts {
			return p.giveUp(attempt, err)
		}
		pause := p.Backoff(attempt)
		if p.Wait != nil {
			var werr error
			if pause, werr = p.Wait(err, pause); werr != nil {
				return werr
			}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= pause {
			return p.giveUp(attempt, err)
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt, pause, err)
		}
		if serr := p.sleep(ctx, pause); serr != nil {
			return serr
		}
	}
}

// Backoff returns the jittered pause after the given failed call (1-based):
// min(Base·2^(attempt−1), Cap), less a random share of up to Jitter of it.
func (p Policy) Backoff(attempt int) time.Duration {
	d := max(p.Base, 0)
	ceiling := max(p.Cap, d)
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	j := p.Jitter
	if j == 0 {
		j = DefaultJitter
	}
	spread := time.Duration(min(max(j, 0), 1) * float64(d))
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	return d - spread + time.Duration(min(max(r(), 0), 1)*float64(spread))
}

func (p Policy) giveUp(attempts int, err error) error {
	if p.GiveUp != nil {
		return p.GiveUp(attempts, err)
	}
	return err
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits d on a timer, or until ctx ends and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
