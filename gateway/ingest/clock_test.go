package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

func TestTokenBucket(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		perSecond float64
		burst     int
		idle      time.Duration // clock advance before the first request
		n         int
		want      []time.Duration // sleeps
	}{
		{name: "burst first, then spaced", perSecond: 2, burst: 3, n: 5,
			want: []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}},
		{name: "one per 4 s", perSecond: 0.25, burst: 1, n: 3,
			want: []time.Duration{4 * time.Second, 4 * time.Second}},
		{name: "refills while idle but not beyond burst", perSecond: 1, burst: 2, idle: time.Hour, n: 3,
			want: []time.Duration{time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := NewManualClock(t0)
			b, err := NewTokenBucket(tt.perSecond, tt.burst, clock)
			if err != nil {
				t.Fatal(err)
			}
			clock.Add(tt.idle)
			for range tt.n {
				if err := b.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			got := clock.Sleeps()
			if len(got) != len(tt.want) {
				t.Fatalf("sleeps=%v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("sleeps=%v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestTokenBucketCanceled(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(t0)
	b, err := NewTokenBucket(1, 1, clock)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Wait(ctx); err != context.Canceled {
		t.Fatalf("Wait=%v, want context.Canceled", err)
	}
	if len(clock.Sleeps()) != 0 {
		t.Fatalf("slept %v on a canceled context", clock.Sleeps())
	}
}

// interrupted is a ManualClock whose next Sleep ends as if its context
// had been canceled meanwhile.
type interrupted struct {
	*ManualClock
	fail bool
}

func (c *interrupted) Sleep(ctx context.Context, d time.Duration) error {
	if c.fail {
		c.fail = false
		return context.Canceled
	}
	return c.ManualClock.Sleep(ctx, d)
}

// TestTokenBucketCanceledWhileWaiting: a waiter whose context ends during
// its wait gives its token back, so the next waiter is not delayed by it.
func TestTokenBucketCanceledWhileWaiting(t *testing.T) {
	t.Parallel()
	clock := &interrupted{ManualClock: NewManualClock(t0)}
	b, err := NewTokenBucket(1, 1, clock)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.fail = true
	if err := b.Wait(context.Background()); err != context.Canceled {
		t.Fatalf("Wait=%v, want context.Canceled", err)
	}
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := clock.Sleeps(), []time.Duration{time.Second}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("sleeps=%v, want %v (the canceled waiter's token given back)", got, want)
	}
}

func TestNewTokenBucketInvalid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r float64
		b int
	}{{0, 1}, {-1, 1}, {1, 0}} {
		_, err := NewTokenBucket(c.r, c.b, nil)
		wantCode(t, err, forecast.EINVALID)
	}
}

func TestSystemClockSleepCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (SystemClock{}).Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep=%v, want context.Canceled", err)
	}
}
