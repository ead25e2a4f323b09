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

// Replay runs at wall speed from Start: Now = Start + (wall() − wall at
// construction). The wall reading keeps Go's monotonic clock, so a jump of
// the system clock does not move the replay.
type Replay struct {
	start time.Time
	wall0 time.Time
	wall  func() time.Time
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
	return &Replay{start: start.UTC(), wall0: wall(), wall: wall}, nil
}

// Now returns the replayed time.
func (r *Replay) Now() time.Time { return r.start.Add(r.wall().Sub(r.wall0)) }

// Mode returns ModeReplay.
func (r *Replay) Mode() string { return ModeReplay }

// Start returns the instant the replay started at.
func (r *Replay) Start() time.Time { return r.start }

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
