package forecast

import (
	"time"
)

// Hour is the step of every Series.
const Hour = time.Hour

// Series is an hourly series: Values[i] is the mean over the hour starting at
// Start + i hours. Start is UTC and hour-aligned.
type Series struct {
	Start  time.Time
	Values []float64
}

// End returns the end of the last hour covered (exclusive).
func (s Series) End() time.Time { return s.Start.Add(time.Duration(len(s.Values)) * Hour) }

// Len returns the number of hours.
func (s Series) Len() int { return len(s.Values) }

// Index returns the index of the hour containing t, and whether it is inside.
func (s Series) Index(t time.Time) (int, bool) {
	if t.Before(s.Start) {
		return -1, false
	}
	i := int(t.Sub(s.Start) / Hour)
	return i, i < len(s.Values)
}

// At returns the value of the hour containing t.
func (s Series) At(t time.Time) (float64, bool) {
	i, ok := s.Index(t)
	if !ok {
		return 0, false
	}
	return s.Values[i], true
}

// Window returns the part of s in [from, to), clamped to s. The values are
// shared with s, not copied.
func (s Series) Window(from, to time.Time) Series {
	i := s.clamp(from)
	j := s.clamp(to)
	if j < i {
		j = i
	}
	return Series{Start: s.Start.Add(time.Duration(i) * Hour), Values: s.Values[i:j]}
}

// Last returns the n hours that end at end (exclusive), or false when s does
// not cover them all.
func (s Series) Last(end time.Time, n int) ([]float64, bool) {
	if n < 0 || !end.Equal(end.Truncate(Hour)) {
		return nil, false
	}
	j := int(end.Sub(s.Start) / Hour)
	if end.Before(s.Start) || j > len(s.Values) || j-n < 0 {
		return nil, false
	}
	return s.Values[j-n : j], true
}

func (s Series) clamp(t time.Time) int {
	if !t.After(s.Start) {
		return 0
	}
	d := t.Sub(s.Start)
	i := int((d + Hour - 1) / Hour)
	if i > len(s.Values) {
		return len(s.Values)
	}
	return i
}

// HourFloor returns t in UTC truncated to the hour.
func HourFloor(t time.Time) time.Time { return t.UTC().Truncate(Hour) }
