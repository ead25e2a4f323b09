package clock

import (
	"testing"
	"time"
)

func TestReplay(t *testing.T) {
	t.Parallel()
	wall := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	now := wall
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	r, err := NewReplay(start, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Now(), start; !got.Equal(want) {
		t.Fatalf("Now=%v, want %v", got, want)
	}
	now = now.Add(90 * time.Minute)
	if got, want := r.Now(), start.Add(90*time.Minute); !got.Equal(want) {
		t.Fatalf("Now=%v, want %v", got, want)
	}
	if got, want := r.Mode(), ModeReplay; got != want {
		t.Fatalf("Mode=%q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, mode string
		want       string
		wantErr    bool
	}{
		{name: "system", mode: "system", want: ModeSystem},
		{name: "replay", mode: "replay", want: ModeReplay},
		{name: "unknown", mode: "lunar", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(tt.mode, start)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Mode(); got != tt.want {
				t.Fatalf("Mode=%q, want %q", got, tt.want)
			}
		})
	}
}

func TestReplayWithSpeed(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	r, err := NewReplay(start, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	fast, err := r.WithSpeed(360)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fast.Now(), start.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("at the switch Now=%v, want %v (the same instant as before)", got, want)
	}
	now = now.Add(10 * time.Second)
	if got, want := fast.Now(), start.Add(time.Minute+time.Hour); !got.Equal(want) {
		t.Fatalf("10 s later at 360x Now=%v, want %v", got, want)
	}
	if got, want := Wall(fast, time.Hour), 10*time.Second; got != want {
		t.Fatalf("Wall(1h)=%v, want %v", got, want)
	}
	if got, want := Wall(System{}, time.Hour), time.Hour; got != want {
		t.Fatalf("Wall(system, 1h)=%v, want %v", got, want)
	}
	if got, want := Span(fast, 10*time.Second), time.Hour; got != want {
		t.Fatalf("Span(10s)=%v, want %v", got, want)
	}
	if got, want := Span(System{}, time.Hour), time.Hour; got != want {
		t.Fatalf("Span(system, 1h)=%v, want %v", got, want)
	}
	for _, bad := range []float64{0, 0.5, -1, MaxSpeed + 1} {
		if _, err := r.WithSpeed(bad); err == nil {
			t.Errorf("WithSpeed(%v): no error", bad)
		}
	}
}

// TestReplayAnchored: two clocks of the same start, anchor and speed made
// at different wall instants tell the same time, anchor + d reads start +
// speed × d; bad speeds and a missing anchor are refused.
func TestReplayAnchored(t *testing.T) {
	t.Parallel()
	anchor := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	start := time.Date(2021, 6, 2, 21, 57, 30, 0, time.UTC)
	now := anchor.Add(3 * time.Second)
	wall := func() time.Time { return now }
	a, err := NewReplayAnchored(start, anchor, 5, wall)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(7 * time.Second)
	b, err := NewReplayAnchored(start, anchor, 5, wall)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(50 * time.Second); !a.Now().Equal(want) || !b.Now().Equal(want) {
		t.Fatalf("10 s after the anchor at 5x: %v and %v, want %v", a.Now(), b.Now(), want)
	}
	for _, bad := range []struct {
		anchor time.Time
		speed  float64
	}{{time.Time{}, 1}, {anchor, 0}, {anchor, MaxSpeed + 1}} {
		if _, err := NewReplayAnchored(start, bad.anchor, bad.speed, wall); err == nil {
			t.Errorf("anchor %v speed %v: no error", bad.anchor, bad.speed)
		}
	}
}

// TestAt: a wall timestamp (an API server's) read in a replay clock at
// speed, and unchanged in the system clock.
func TestAt(t *testing.T) {
	t.Parallel()
	wall := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	r, _ := NewReplay(start, func() time.Time { return wall })
	fast, _ := r.WithSpeed(3600)
	if got, want := At(fast, wall.Add(2*time.Second)), start.Add(2*time.Hour); !got.Equal(want) {
		t.Errorf("At(2 s later at 3600x)=%v, want %v", got, want)
	}
	if got, want := At(fast, wall.Add(-time.Second)), start.Add(-time.Hour); !got.Equal(want) {
		t.Errorf("At(1 s before)=%v, want %v", got, want)
	}
	if got := At(System{}, wall); !got.Equal(wall) {
		t.Errorf("At(system)=%v, want %v", got, wall)
	}
	if got := At(fast, time.Time{}); !got.IsZero() {
		t.Errorf("At(zero)=%v, want zero (not happened)", got)
	}
}
