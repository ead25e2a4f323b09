package main

import (
	"fmt"
	"strings"
	"time"
)

// parseWhen parses an issue time: YYYY-MM-DD, RFC 3339, or one relative to
// now for scheduled runs (a CronJob): "now" (the current hour), "today"
// (00:00 UTC), each optionally minus a Go duration of whole hours, as in
// "today-24h" or "now-6h".
func parseWhen(s string, now time.Time) (time.Time, error) {
	var base time.Time
	rest := ""
	switch {
	case strings.HasPrefix(s, "now"):
		base, rest = now.UTC().Truncate(time.Hour), s[len("now"):]
	case strings.HasPrefix(s, "today"):
		base, rest = now.UTC().Truncate(24*time.Hour), s[len("today"):]
	default:
		return parseTime(s)
	}
	if rest == "" {
		return base, nil
	}
	if rest[0] != '-' {
		return time.Time{}, fmt.Errorf("%q: after now or today only -DURATION may follow, e.g. today-24h", s)
	}
	d, err := time.ParseDuration(rest[1:])
	if err != nil || d < 0 || d%time.Hour != 0 {
		return time.Time{}, fmt.Errorf("%q: %q is not a whole number of hours, e.g. 24h", s, rest[1:])
	}
	return base.Add(-d), nil
}
