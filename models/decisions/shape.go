package decisions

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// MaxSlack bounds a shape's slack: a forecast store keeps at most 30 lead
// days, and the in-process models forecast 96 hours.
const MaxSlack = 30 * 24 * time.Hour

// Shape is one kind of delay-tolerant job: it runs Duration, may start at
// its issue time or later, and must finish within Slack of its issue time.
// With Zones it may also run in any of them (the baseline is Zones[0], its
// origin); without, it stays in each zone of the run on its own (a shift
// in time only).
type Shape struct {
	Duration time.Duration   `json:"duration"`
	Slack    time.Duration   `json:"slack"`
	Zones    []forecast.Zone `json:"zones,omitempty"`
}

// DefaultShapeList is the shapes replayed when none are given, as
// ParseShapes reads them: 1 h within 12 h, 3 h within 24 h, 8 h within
// 48 h, each zone on its own.
const DefaultShapeList = "1h/12h,3h/24h,8h/48h"

// DefaultShapes returns the shapes of DefaultShapeList (a test keeps the
// two the same), a new slice each call.
func DefaultShapes() []Shape {
	return []Shape{
		{Duration: time.Hour, Slack: 12 * time.Hour},
		{Duration: 3 * time.Hour, Slack: 24 * time.Hour},
		{Duration: 8 * time.Hour, Slack: 48 * time.Hour},
	}
}

// String writes the shape as ParseShape reads it: DURATION/SLACK, then
// @Z1+Z2… when it has zones ("3h/24h", "1h/12h@DE+SE").
func (s Shape) String() string {
	out := hours(s.Duration) + "/" + hours(s.Slack)
	if len(s.Zones) > 0 {
		out += "@" + zoneKey(s.Zones)
	}
	return out
}

// hours writes d as "3h" when it is whole hours, else in Go's syntax.
func hours(d time.Duration) string {
	if d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}

func zoneKey(zs []forecast.Zone) string {
	parts := make([]string, len(zs))
	for i, z := range zs {
		parts[i] = string(z)
	}
	return strings.Join(parts, "+")
}

// ParseShape reads DURATION/SLACK[@ZONE+ZONE…], durations in Go's syntax
// (1h, 90m). The duration must be a positive whole number of hours (the
// replay's issue times and the forecasts are hourly), the slack a whole
// number of hours at least the duration and at most MaxSlack, the zones
// valid and distinct. EINVALID (field "shapes") naming the problem.
func ParseShape(text string) (Shape, error) {
	bad := func(format string, args ...any) (Shape, error) {
		return Shape{}, forecast.FieldErrorf(forecast.EINVALID, "shapes", "shape %q: "+format, append([]any{text}, args...)...)
	}
	spec, zones, hasZones := strings.Cut(strings.TrimSpace(text), "@")
	ds, ss, ok := strings.Cut(spec, "/")
	if !ok {
		return bad("not DURATION/SLACK (e.g. 3h/24h)")
	}
	d, err := time.ParseDuration(strings.TrimSpace(ds))
	if err != nil {
		return bad("duration: %v", err)
	}
	sl, err := time.ParseDuration(strings.TrimSpace(ss))
	if err != nil {
		return bad("slack: %v", err)
	}
	switch {
	case d <= 0 || d%time.Hour != 0:
		return bad("duration %v is not a positive whole number of hours", d)
	case sl%time.Hour != 0 || sl < d:
		return bad("slack %v is not a whole number of hours at least the duration %v", sl, d)
	case sl > MaxSlack:
		return bad("slack %v is longer than %v", sl, MaxSlack)
	}
	s := Shape{Duration: d, Slack: sl}
	if !hasZones {
		return s, nil
	}
	for _, f := range strings.Split(zones, "+") {
		z, err := forecast.ParseZone(strings.TrimSpace(f))
		if err != nil {
			return bad("%s", forecast.ErrorMessage(err))
		}
		if slices.Contains(s.Zones, z) {
			return bad("zone %s is listed twice", z)
		}
		s.Zones = append(s.Zones, z)
	}
	return s, nil
}

// ParseShapes reads a comma-separated list of shapes (ParseShape); an
// empty list is EINVALID.
func ParseShapes(list string) ([]Shape, error) {
	var out []Shape
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		s, err := ParseShape(f)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "shapes", "no shape given")
	}
	return out, nil
}

// ReadShapes reads one shape per line (ParseShape); blank lines and lines
// starting with # are skipped. EINVALID names the line of a bad shape.
func ReadShapes(r io.Reader) ([]Shape, error) {
	sc := bufio.NewScanner(r)
	var out []Shape
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := ParseShape(line)
		if err != nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "shapes", "line %d: %s", n, forecast.ErrorMessage(err))
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "shapes", "no shape given")
	}
	return out, nil
}
