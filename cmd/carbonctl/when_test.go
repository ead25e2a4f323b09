package main

import (
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 5, 14, 27, 3, 0, time.FixedZone("+01:00", 3600))
	ok := map[string]time.Time{
		"now":        time.Date(2026, 3, 5, 13, 0, 0, 0, time.UTC),
		"now-6h":     time.Date(2026, 3, 5, 7, 0, 0, 0, time.UTC),
		"today":      time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC),
		"today-24h":  time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC),
		"today-168h": time.Date(2026, 2, 26, 0, 0, 0, 0, time.UTC),
		"2021-01-02": time.Date(2021, 1, 2, 0, 0, 0, 0, time.UTC),
	}
	for in, want := range ok {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"now+1h", "today-1d", "today-90m", "today--1h", "nowish", "yesterday"} {
		if _, err := parseWhen(bad, now); err == nil {
			t.Errorf("parseWhen(%q) succeeded", bad)
		}
	}
}
