package ingest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// t0 is the start of the hours the tests use.
var t0 = time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC)

// call is one Fetch a fakeSource received.
type call struct {
	at       time.Time // the clock's time
	from, to time.Time
}

// fakeSource answers Fetch with answer, recording each call.
type fakeSource struct {
	name   string
	limits Limits
	clock  Clock
	answer func(n int, from, to time.Time) (Batch, error) // n counts calls from 0

	mu    sync.Mutex
	calls []call
}

func (s *fakeSource) Name() string   { return s.name }
func (s *fakeSource) Limits() Limits { return s.limits }

func (s *fakeSource) Fetch(ctx context.Context, _ forecast.Zone, _ forecast.Signal, from, to time.Time) (Batch, error) {
	if err := ctx.Err(); err != nil {
		return Batch{}, err
	}
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, call{at: s.clock.Now(), from: from, to: to})
	s.mu.Unlock()
	return s.answer(n, from, to)
}

func (s *fakeSource) Calls() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// hourlyAnswer answers every hour of [from, to) with value 100 + the hour
// of day.
func hourlyAnswer(_ int, from, to time.Time) (Batch, error) {
	var b Batch
	b.Period = time.Hour
	for t := from; t.Before(to); t = t.Add(time.Hour) {
		b.Points = append(b.Points, Point{Time: t, Value: float64(100 + t.Hour())})
	}
	return b, nil
}

// newPoller returns a Poller over one feed of src (zone DE, lifecycle) into
// sink, with a fixed jitter of 0.5 and cfg's other fields.
func newPoller(tb testing.TB, src *fakeSource, sink Sink, cfg Config) *Poller {
	tb.Helper()
	cfg.Sink = sink
	cfg.Feeds = []Feed{{Source: src, Zone: "DE", Signal: forecast.SignalLifecycle}}
	cfg.Clock = src.clock
	cfg.Jitter = func() float64 { return 0.5 }
	if cfg.Rates == nil {
		cfg.Rates = map[string]Rate{src.name: {PerSecond: 1000, Burst: 1000}}
	}
	p, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func unavailable(status int, retryAfter time.Duration) error {
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "down",
		Err: &UpstreamError{Source: "fake", Status: status, RetryAfter: retryAfter}}
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := forecast.ErrorCode(err); got != code {
		tb.Fatalf("error code=%q, want %q (err: %v)", got, code, err)
	}
}
