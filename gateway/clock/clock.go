// Package clock gives the gateway its notion of "now": the system clock, or a
// replay clock that runs at wall speed from a fixed instant inside the
// bundled data, so that the embedded default answers as if it were that day.
// Every response names the clock that answered (Mode and Now).
package clock

import (
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Modes.
const (
	ModeSystem = "system"
	ModeReplay = "replay"
)

// Clock tells the time. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time // UTC
	Mode() string   // ModeSystem or ModeReplay (or a test's own name)
}

// System is the machine's clock.
type System struct{}

var _ Clock = System{}

// Now returns time.Now in UTC.
func (System) Now() time.Time { return time.Now().UTC() }

// Mode returns ModeSystem.
func (System) Mode() string { return ModeSystem }

// Replay runs from Start at Speed times wall speed: Now = Start + Speed ×
// (wall() − wall at construction). The wall reading keeps Go's monotonic
// clock, so a jump of the system clock does not move the replay.
type Replay struct {
	start time.Time
	wall0 time.Time
	wall  func() time.Time
	speed float64
}

var _ Clock = (*Replay)(nil)

// NewReplay returns a replay clock that reads start now. wall is the wall
// clock it follows; nil means time.Now.
func NewReplay(start time.Time, wall func() time.Time) (*Replay, error) {
	if start.IsZero() {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "replay_start", "replay start must be set")
	}
	if wall == nil {
		wall = time.Now
	}
	return &Replay{start: start.UTC(), wall0: wall(), wall: wall, speed: 1}, nil
}

// NewReplayAnchored returns a replay clock at speed that read start at the
// wall instant anchor (Now = start + speed × (wall() − anchor)): processes
// given the same start, anchor and speed tell the same time, wherever and
// whenever each started (replicas of a demo or a test under a fast
// replay). wall nil means time.Now; anchor, read from outside the process,
// has no monotonic reading, so a jump of the system clock moves this
// replay too. speed must be in [1, MaxSpeed].
func NewReplayAnchored(start, anchor time.Time, speed float64, wall func() time.Time) (*Replay, error) {
	r, err := NewReplay(start, wall)
	if err != nil {
		return nil, err
	}
	if anchor.IsZero() {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "replay_anchor", "replay anchor must be set")
	}
	if !(speed >= 1 && speed <= MaxSpeed) {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "replay_speed", "replay speed must be between 1 and %d, got %v", MaxSpeed, speed)
	}
	r.wall0, r.speed = anchor.Round(0), speed
	return r, nil
}

// MaxSpeed bounds a replay's speed factor: a day in a second.
const MaxSpeed = 86400

// WithSpeed returns a replay clock that reads the same now and then runs
// speed times as fast as the wall clock (1: wall speed), so that a demo
// shows hours of scheduling within a minute. speed must be in [1, MaxSpeed].
func (r *Replay) WithSpeed(speed float64) (*Replay, error) {
	if !(speed >= 1 && speed <= MaxSpeed) {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "replay_speed", "replay speed must be between 1 and %d, got %v", MaxSpeed, speed)
	}
	w := r.wall()
	return &Replay{start: r.at(w), wall0: w, wall: r.wall, speed: speed}, nil
}

// Now returns the replayed time.
func (r *Replay) Now() time.Time { return r.at(r.wall()) }

func (r *Replay) at(wall time.Time) time.Time {
	return r.start.Add(time.Duration(float64(wall.Sub(r.wall0)) * r.speed))
}

// Speed returns how many times as fast as the wall clock the replay runs.
func (r *Replay) Speed() float64 { return r.speed }

// Mode returns ModeReplay.
func (r *Replay) Mode() string { return ModeReplay }

// Start returns the instant the replay started at.
func (r *Replay) Start() time.Time { return r.start }

// Wall converts a span of c's time into wall-clock time: d itself, or
// d / Speed on a faster replay. Timers that wait for an instant of c's
// time (the controller's release of a held workload) wait this long.
func Wall(c Clock, d time.Duration) time.Duration {
	if r, ok := c.(*Replay); ok && r.speed > 1 {
		return time.Duration(float64(d) / r.speed)
	}
	return d
}

// Span converts a span of wall-clock time into c's time: the inverse of
// Wall.
func Span(c Clock, wall time.Duration) time.Duration {
	if r, ok := c.(*Replay); ok && r.speed > 1 {
		return time.Duration(float64(wall) * r.speed)
	}
	return wall
}

// At returns the instant of c's time at which the wall clock read wall: a
// timestamp the Kubernetes API wrote (a Job's start) read in the clock
// decisions are made in. wall itself for the system clock.
func At(c Clock, wall time.Time) time.Time {
	if r, ok := c.(*Replay); ok && !wall.IsZero() {
		return r.at(wall.Round(0))
	}
	return wall
}

// Parse returns the clock named by mode: "system", or "replay" starting at
// replayStart. Unknown modes are EINVALID naming the "clock" field.
func Parse(mode string, replayStart time.Time) (Clock, error) {
	switch mode {
	case ModeSystem:
		return System{}, nil
	case ModeReplay:
		return NewReplay(replayStart, nil)
	}
	return nil, forecast.FieldErrorf(forecast.EINVALID, "clock", "clock %q is not one of system, replay", mode)
}
