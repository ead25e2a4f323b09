package ingest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

func TestMemorySink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewMemorySink()
	if _, ok, err := s.Latest(ctx, "DE", SignalMarginal); ok || err != nil {
		t.Fatalf("Latest of an empty sink=%v, %v", ok, err)
	}
	plus2 := time.FixedZone("", 2*3600)
	pts := []Point{{Time: t0, Value: 1}, {Time: t0.Add(time.Hour).In(plus2), Value: 2}}
	for range 2 { // idempotent
		if err := s.Upsert(ctx, "DE", SignalMarginal, pts); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Upsert(ctx, "DE", SignalMarginal, []Point{{Time: t0, Value: 3}}); err != nil {
		t.Fatal(err)
	}
	assertPoints(t, s.Points("DE", SignalMarginal), []Point{{Time: t0, Value: 3}, {Time: t0.Add(time.Hour), Value: 2}})
	latest, ok, err := s.Latest(ctx, "DE", SignalMarginal)
	if err != nil || !ok || !latest.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Latest=%v, %v, %v", latest, ok, err)
	}
	if got := s.Points("DE", forecast.SignalLifecycle); len(got) != 0 {
		t.Fatalf("another signal holds %v", got)
	}

	for _, bad := range []Point{{Time: t0.Add(time.Minute), Value: 1}, {Time: t0, Value: -1}, {Time: t0, Value: math.NaN()}} {
		wantCode(t, s.Upsert(ctx, "DE", SignalMarginal, []Point{bad}), forecast.EINVALID)
	}
	wantCode(t, s.Upsert(ctx, "DE", "average", pts), forecast.EINVALID)
}

func TestMemorySinkLast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewMemorySink()
	if err := s.Upsert(ctx, "DE", forecast.SignalDirect, []Point{
		{Time: t0, Value: 1}, {Time: t0.Add(time.Hour), Value: 2}, {Time: t0.Add(3 * time.Hour), Value: 4},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Last(ctx, "DE", forecast.SignalDirect, t0.Add(2*time.Hour), 2)
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("Last=%v, %v", got, err)
	}
	_, err = s.Last(ctx, "DE", forecast.SignalDirect, t0.Add(4*time.Hour), 2)
	wantCode(t, err, forecast.EUNAVAILABLE)
	_, err = s.Last(ctx, "FR", forecast.SignalDirect, t0.Add(2*time.Hour), 2)
	wantCode(t, err, forecast.ENOTFOUND)
	_, err = s.Last(ctx, "DE", forecast.SignalDirect, t0.Add(time.Minute), 1)
	wantCode(t, err, forecast.EINVALID)
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]forecast.Signal{"": forecast.SignalLifecycle, "Direct": forecast.SignalDirect, " marginal ": SignalMarginal} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Fatalf("ParseSignal(%q)=%q, %v, want %q", in, got, err, want)
		}
	}
	_, err := ParseSignal("average")
	wantCode(t, err, forecast.EINVALID)
}
