package breaker

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	t.Parallel()
	now := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	var states []State
	b := New(Config{Failures: 2, Cooldown: time.Second, Now: func() time.Time { return now }, OnChange: func(s State) { states = append(states, s) }})
	call := func(o Outcome) bool {
		t.Helper()
		done, ok := b.Allow()
		if ok {
			done(o)
			done(Failure) // a second report is ignored
		}
		return ok
	}
	steps := []struct {
		note    string
		advance time.Duration
		outcome Outcome
		wantOK  bool
		want    State
	}{
		{"success", 0, Success, true, Closed},
		{"one failure", 0, Failure, true, Closed},
		{"success resets the count", 0, Success, true, Closed},
		{"failure 1", 0, Failure, true, Closed},
		{"ignored outcomes do not count", 0, Ignore, true, Closed},
		{"failure 2 opens", 0, Failure, true, Open},
		{"open fails fast", 500 * time.Millisecond, Success, false, Open},
		{"after the cool-down a probe fails", 600 * time.Millisecond, Failure, true, Open},
		{"open again", 0, Success, false, Open},
		{"a probe that learns nothing", 1100 * time.Millisecond, Ignore, true, HalfOpen},
		{"the next probe succeeds", 0, Success, true, Closed},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if got := call(s.outcome); got != s.wantOK {
			t.Fatalf("%s: allowed=%v, want %v", s.note, got, s.wantOK)
		}
		if got := b.State(); got != s.want {
			t.Fatalf("%s: state=%v, want %v", s.note, got, s.want)
		}
	}
	want := []State{Open, HalfOpen, Open, HalfOpen, Closed}
	if len(states) != len(want) {
		t.Fatalf("changes=%v, want %v", states, want)
	}
	for i := range want {
		if states[i] != want[i] {
			t.Fatalf("changes=%v, want %v", states, want)
		}
	}
}

func TestOneProbeAtATime(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	b := New(Config{Failures: 1, Cooldown: time.Second, Now: func() time.Time { return now }})
	done, _ := b.Allow()
	done(Failure)
	now = now.Add(2 * time.Second)
	probe, ok := b.Allow()
	if !ok {
		t.Fatal("no probe after the cool-down")
	}
	if _, ok := b.Allow(); ok {
		t.Fatal("a second call went through while the probe is in flight")
	}
	probe(Success)
	if _, ok := b.Allow(); !ok || b.State() != Closed {
		t.Fatalf("state=%v after a good probe", b.State())
	}
}
