package main

import (
	"io"
	"slices"
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

// The Indexed Job's pods get absolute times: relative ones are resolved
// when the manifest is rendered.
func TestBackfillJobArgsResolveRelativeTimes(t *testing.T) {
	t.Parallel()
	fs := newFlags("deploy render", io.Discard)
	fs.String("from", "", "")
	fs.String("to", "", "")
	fs.String("zones", "", "")
	if err := fs.Parse([]string{"--zones=DE", "--from=today-48h", "--to=2026-03-05"}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 5, 14, 27, 0, 0, time.UTC)
	args, err := backfillJobArgs(fs.FlagSet, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--from=2026-03-03T00:00:00Z", "--to=2026-03-05", "--zones=DE"}
	if !slices.Equal(args, want) {
		t.Fatalf("args %q, want %q", args, want)
	}
	fs2 := newFlags("deploy render", io.Discard)
	fs2.String("from", "", "")
	if err := fs2.Parse([]string{"--from=today-1d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := backfillJobArgs(fs2.FlagSet, now); err == nil || !isUsage(err) {
		t.Fatalf("bad relative time: %v, want a usage error", err)
	}
}
