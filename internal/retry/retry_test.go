package retry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/internal/retry"
)

var (
	errDown = errors.New("down")
	errBad  = errors.New("bad request")
)

// recorder is an injected Sleep that records the pauses and never blocks.
type recorder struct {
	mu     sync.Mutex
	pauses []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pauses = append(r.pauses, d)
	return nil
}

// failing returns an op that fails with errs in turn, then succeeds, and
// counts its calls.
func failing(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

func TestDo(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	retryable := func(err error) bool { return errors.Is(err, errDown) }
	tests := []struct {
		name      string
		policy    retry.Policy
		errs      []error
		wantErr   error
		wantCalls int
		wantWaits []time.Duration
	}{
		{name: "success at once", policy: retry.Policy{Attempts: 3, Base: 100 * ms},
			wantCalls: 1},
		{name: "doubles up to the cap, equal jitter by default", policy: retry.Policy{Attempts: 6, Base: 100 * ms, Cap: 300 * ms},
			errs: []error{errDown, errDown, errDown, errDown}, wantCalls: 5,
			// rand 0.5: d/2 + d/4.
			wantWaits: []time.Duration{75 * ms, 150 * ms, 225 * ms, 225 * ms}},
		{name: "gives up after Attempts with the last error", policy: retry.Policy{Attempts: 3, Base: 100 * ms, Cap: 300 * ms},
			errs: []error{errDown, errDown, fmt.Errorf("last: %w", errDown), errDown}, wantErr: errDown, wantCalls: 3,
			wantWaits: []time.Duration{75 * ms, 150 * ms}},
		{name: "not retryable", policy: retry.Policy{Attempts: 3, Base: 100 * ms, Retryable: retryable},
			errs: []error{errDown, errBad}, wantErr: errBad, wantCalls: 2, wantWaits: []time.Duration{75 * ms}},
		{name: "full jitter", policy: retry.Policy{Attempts: 3, Base: 100 * ms, Cap: time.Second, Jitter: 1},
			errs: []error{errDown, errDown}, wantCalls: 3, wantWaits: []time.Duration{50 * ms, 100 * ms}},
		{name: "cap below base is base", policy: retry.Policy{Attempts: 3, Base: 100 * ms, Cap: ms},
			errs: []error{errDown, errDown}, wantCalls: 3, wantWaits: []time.Duration{75 * ms, 75 * ms}},
		{name: "Wait replaces the pause", policy: retry.Policy{Attempts: 3, Base: 100 * ms,
			Wait: func(error, time.Duration) (time.Duration, error) { return 7 * time.Second, nil }},
			errs: []error{errDown}, wantCalls: 2, wantWaits: []time.Duration{7 * time.Second}},
		{name: "Wait ends the retries", policy: retry.Policy{Attempts: 3, Base: 100 * ms,
			Wait: func(error, time.Duration) (time.Duration, error) { return 0, errBad }},
			errs: []error{errDown}, wantErr: errBad, wantCalls: 1},
		{name: "GiveUp wraps the last error", policy: retry.Policy{Attempts: 2, Base: 100 * ms,
			GiveUp: func(n int, err error) error { return fmt.Errorf("gave up after %d: %w", n, err) }},
			errs: []error{errDown, errDown}, wantErr: errDown, wantCalls: 2, wantWaits: []time.Duration{75 * ms}},
		{name: "no bound without Attempts", policy: retry.Policy{Base: ms, Cap: 2 * ms},
			errs: slices.Repeat([]error{errDown}, 20), wantCalls: 21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			p := tt.policy
			p.Sleep, p.Rand = rec.sleep, func() float64 { return 0.5 }
			calls := 0
			err := p.Do(context.Background(), failing(&calls, tt.errs...))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Do=%v, want %v", err, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Errorf("calls=%d, want %d", calls, tt.wantCalls)
			}
			if tt.wantWaits != nil && !slices.Equal(rec.pauses, tt.wantWaits) {
				t.Errorf("pauses=%v, want %v", rec.pauses, tt.wantWaits)
			}
			if got := len(rec.pauses); got != calls-1 && err == nil {
				t.Errorf("%d pauses for %d calls", got, calls)
			}
		})
	}
}

func TestDoGiveUpMessage(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Attempts: 2, Base: time.Millisecond, Sleep: (&recorder{}).sleep,
		GiveUp: func(n int, err error) error { return fmt.Errorf("gave up after %d attempts: %w", n, err) }}
	calls := 0
	err := p.Do(context.Background(), failing(&calls, errDown, errDown))
	if got, want := fmt.Sprint(err), "gave up after 2 attempts: down"; got != want {
		t.Fatalf("Do=%q, want %q", got, want)
	}
}

func TestDoOnRetry(t *testing.T) {
	t.Parallel()
	type call struct {
		attempt int
		pause   time.Duration
		err     error
	}
	var got []call
	p := retry.Policy{Attempts: 3, Base: time.Second, Cap: time.Minute, Jitter: 1, Rand: func() float64 { return 0.25 },
		Sleep:   (&recorder{}).sleep,
		OnRetry: func(a int, d time.Duration, err error) { got = append(got, call{a, d, err}) }}
	calls := 0
	if err := p.Do(context.Background(), failing(&calls, errDown, errBad)); err != nil {
		t.Fatal(err)
	}
	want := []call{{1, 250 * time.Millisecond, errDown}, {2, 500 * time.Millisecond, errBad}}
	if !slices.Equal(got, want) {
		t.Fatalf("OnRetry calls=%v, want %v", got, want)
	}
}

func TestDoContext(t *testing.T) {
	t.Parallel()
	t.Run("ended during the call", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := retry.Policy{Attempts: 5, Base: time.Millisecond}.Do(ctx, func(context.Context) error {
			calls++
			cancel()
			return errDown
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("Do=%v after %d calls, want context.Canceled after 1", err, calls)
		}
	})
	t.Run("ended during the pause", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		p := retry.Policy{Attempts: 5, Base: time.Hour, OnRetry: func(int, time.Duration, error) { cancel() }}
		err := p.Do(ctx, func(context.Context) error { calls++; return errDown })
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("Do=%v after %d calls, want context.Canceled after 1", err, calls)
		}
	})
	t.Run("deadline before the next pause ends: last error at once", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var rec recorder
		calls := 0
		p := retry.Policy{Attempts: 5, Base: time.Hour, Sleep: rec.sleep,
			GiveUp: func(n int, err error) error { return fmt.Errorf("after %d: %w", n, err) }}
		err := p.Do(ctx, func(context.Context) error { calls++; return errDown })
		if !errors.Is(err, errDown) || calls != 1 || len(rec.pauses) != 0 {
			t.Fatalf("Do=%v after %d calls and pauses %v, want errDown after 1 call, no pause", err, calls, rec.pauses)
		}
	})
}

func TestBackoffClampsJitterAndRand(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		jitter, rand float64
		want         time.Duration
	}{
		{jitter: 2, rand: 0, want: 0},
		{jitter: -1, rand: 0.5, want: time.Second}, // negative: no jitter
		{jitter: 0.5, rand: 7, want: time.Second},
		{jitter: 0.5, rand: -3, want: 500 * time.Millisecond},
	} {
		p := retry.Policy{Base: time.Second, Jitter: tt.jitter, Rand: func() float64 { return tt.rand }}
		if got := p.Backoff(1); got != tt.want {
			t.Errorf("Backoff(1) with jitter %v, rand %v = %v, want %v", tt.jitter, tt.rand, got, tt.want)
		}
	}
}

// TestBackoffBounds checks every pause of the default source against its
// nominal bounds, over many draws.
func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Base: 250 * time.Millisecond, Cap: 5 * time.Second}
	for attempt := 1; attempt <= 10; attempt++ {
		d := min(p.Base<<(attempt-1), p.Cap)
		for range 1000 {
			if got := p.Backoff(attempt); got < d/2 || got > d {
				t.Fatalf("Backoff(%d)=%v, want in [%v, %v]", attempt, got, d/2, d)
			}
		}
	}
}

// TestShardsDoNotRetryInLockStep is the failure jitter prevents: shards
// that fail on the same restarted server at the same time, each retrying
// with the production defaults (no injected Rand), wait different pauses,
// spread over the jitter's range, at every attempt.
func TestShardsDoNotRetryInLockStep(t *testing.T) {
	t.Parallel()
	const shards, attempts = 16, 5
	p := retry.Policy{Attempts: attempts, Base: 250 * time.Millisecond, Cap: 5 * time.Second}
	// The server is down for every call: each shard spends its attempts.
	pauses := make([][]time.Duration, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			var rec recorder
			q := p
			q.Sleep = rec.sleep
			if err := q.Do(context.Background(), func(context.Context) error { return errDown }); !errors.Is(err, errDown) {
				t.Errorf("shard %d: Do=%v, want errDown", i, err)
			}
			pauses[i] = rec.pauses
		})
	}
	wg.Wait()
	for a := range attempts - 1 {
		d := min(p.Base<<a, p.Cap)
		at := make([]time.Duration, shards)
		for i := range shards {
			if len(pauses[i]) != attempts-1 {
				t.Fatalf("shard %d paused %d times, want %d", i, len(pauses[i]), attempts-1)
			}
			at[i] = pauses[i][a]
		}
		slices.Sort(at)
		if len(slices.Compact(slices.Clone(at))) != shards {
			t.Errorf("pause %d: shards share pauses (lock-step): %v", a+1, at)
		}
		// 16 uniform draws over [d/2, d) all within a quarter of it: ~1e-8.
		if spread := at[shards-1] - at[0]; spread < d/8 {
			t.Errorf("pause %d: spread %v over [%v, %v), want ≥ %v: %v", a+1, spread, d/2, d, d/8, at)
		}
	}
}
