package ingest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/carbongate/carbongate/forecast"
)

func TestPollResumesFromLatest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := NewManualClock(t0.Add(12*time.Hour + 30*time.Minute))
	src := &fakeSource{name: "fake", clock: clock, answer: hourlyAnswer}
	sink := NewMemorySink()
	if err := sink.Upsert(ctx, "DE", forecast.SignalLifecycle, []Point{{Time: t0.Add(9 * time.Hour), Value: 1}}); err != nil {
		t.Fatal(err)
	}
	p := newPoller(t, src, sink, Config{})
	if err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	calls := src.Calls()
	if len(calls) != 1 || !calls[0].from.Equal(t0.Add(10*time.Hour)) || !calls[0].to.Equal(t0.Add(12*time.Hour)) {
		t.Fatalf("calls=%+v, want one for [10:00, 12:00)", calls)
	}
	assertPoints(t, sink.Points("DE", forecast.SignalLifecycle), []Point{
		{Time: t0.Add(9 * time.Hour), Value: 1},
		{Time: t0.Add(10 * time.Hour), Value: 110},
		{Time: t0.Add(11 * time.Hour), Value: 111},
	})
	if st := p.Status()[0]; !st.Latest.Equal(t0.Add(11*time.Hour)) || st.LastError != "" || st.LastOK.IsZero() {
		t.Fatalf("status=%+v", st)
	}

	// Nothing new within the same hour: no request at all.
	clock.Add(20 * time.Minute)
	if err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(src.Calls()); n != 1 {
		t.Fatalf("%d calls after a second round in the same hour, want 1", n)
	}
}

func TestPollWindow(t *testing.T) {
	t.Parallel()
	now := t0.Add(48*time.Hour + 10*time.Minute)
	tests := []struct {
		name     string
		latest   time.Time // zero: the sink is empty
		backfill time.Duration
		limits   Limits
		want     [][2]time.Duration // [from, to) of each call, from t0
		gapHours float64
	}{
		{name: "empty sink backfills", backfill: 5 * time.Hour,
			want: [][2]time.Duration{{43 * time.Hour, 48 * time.Hour}}},
		{name: "backfill capped by the source history", backfill: 72 * time.Hour, limits: Limits{History: 24 * time.Hour},
			want: [][2]time.Duration{{24 * time.Hour, 48 * time.Hour}}},
		{name: "gap beyond the source history is left", latest: t0, limits: Limits{History: 24 * time.Hour},
			want: [][2]time.Duration{{24 * time.Hour, 48 * time.Hour}}, gapHours: 23},
		{name: "chunks of MaxSpan", latest: t0.Add(22 * time.Hour), limits: Limits{MaxSpan: 10 * time.Hour},
			want: [][2]time.Duration{{23 * time.Hour, 33 * time.Hour}, {33 * time.Hour, 43 * time.Hour}, {43 * time.Hour, 48 * time.Hour}}},
		{name: "MaxSpan rounded to hours", latest: t0.Add(45 * time.Hour), limits: Limits{MaxSpan: 90 * time.Minute},
			want: [][2]time.Duration{{46 * time.Hour, 47 * time.Hour}, {47 * time.Hour, 48 * time.Hour}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := NewManualClock(now)
			src := &fakeSource{name: "fake", clock: clock, limits: tt.limits, answer: hourlyAnswer}
			sink := NewMemorySink()
			if !tt.latest.IsZero() {
				if err := sink.Upsert(ctx, "DE", forecast.SignalLifecycle, []Point{{Time: tt.latest, Value: 1}}); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			p := newPoller(t, src, sink, Config{Backfill: tt.backfill, Metrics: m, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err := p.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			calls := src.Calls()
			if len(calls) != len(tt.want) {
				t.Fatalf("calls=%+v, want %v", calls, tt.want)
			}
			for i, c := range calls {
				if !c.from.Equal(t0.Add(tt.want[i][0])) || !c.to.Equal(t0.Add(tt.want[i][1])) {
					t.Fatalf("call %d=[%v, %v), want [+%v, +%v)", i, c.from, c.to, tt.want[i][0], tt.want[i][1])
				}
			}
			if got := testutil.ToFloat64(m.gaps.WithLabelValues("fake", "DE", "lifecycle")); got != tt.gapHours {
				t.Fatalf("gap hours=%v, want %v", got, tt.gapHours)
			}
			if tt.gapHours > 0 && !strings.Contains(logs.String(), "stay a gap") {
				t.Fatalf("the gap is not logged:\n%s", logs.String())
			}
			last := sink.Points("DE", forecast.SignalLifecycle)
			if got := last[len(last)-1].Time; !got.Equal(t0.Add(47 * time.Hour)) {
				t.Fatalf("latest stored hour=%v, want 47:00", got)
			}
		})
	}
}

func TestPollRetries(t *testing.T) {
	t.Parallel()
	ok := func(from, to time.Time) (Batch, error) { return hourlyAnswer(0, from, to) }
	unauthorized := forecast.Errorf(forecast.EUNAUTHORIZED, "refused")
	tests := []struct {
		name      string
		errs      []error // answer of each call; nil: success; past the end: success
		calls     int
		sleeps    []time.Duration
		code      string
		msg       string
		stored    int
		rateLimit float64 // counter of rate_limited outcomes
	}{
		{name: "5xx retried then success", errs: []error{unavailable(503, 0)}, calls: 2,
			sleeps: []time.Duration{1500 * time.Millisecond}, stored: 2},
		{name: "429 with Retry-After then success", errs: []error{unavailable(429, 7*time.Second)}, calls: 2,
			sleeps: []time.Duration{7 * time.Second}, stored: 2, rateLimit: 1},
		{name: "backoff doubles", errs: []error{unavailable(500, 0), unavailable(502, 0)}, calls: 3,
			sleeps: []time.Duration{1500 * time.Millisecond, 3 * time.Second}, stored: 2},
		{name: "persistent 5xx gives up", errs: []error{unavailable(500, 0), unavailable(500, 0), unavailable(500, 0), unavailable(500, 0)},
			calls: 3, sleeps: []time.Duration{1500 * time.Millisecond, 3 * time.Second},
			code: forecast.EUNAVAILABLE, msg: "gave up after 3 attempts"},
		{name: "Retry-After beyond the bound ends the round", errs: []error{unavailable(429, time.Hour)}, calls: 1,
			code: forecast.EUNAVAILABLE, msg: "asks to wait 1h0m0s", rateLimit: 1},
		{name: "call timeout is retried", errs: []error{context.DeadlineExceeded}, calls: 2,
			sleeps: []time.Duration{1500 * time.Millisecond}, stored: 2},
		{name: "unauthorized is not retried", errs: []error{unauthorized}, calls: 1, code: forecast.EUNAUTHORIZED},
		{name: "malformed is not retried", errs: []error{forecast.Errorf(forecast.EINVALID, "bad JSON")}, calls: 1, code: forecast.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := NewManualClock(t0.Add(2*time.Hour + time.Minute))
			src := &fakeSource{name: "fake", clock: clock, answer: func(n int, from, to time.Time) (Batch, error) {
				if n < len(tt.errs) && tt.errs[n] != nil {
					return Batch{}, tt.errs[n]
				}
				return ok(from, to)
			}}
			m, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := NewMemorySink()
			p := newPoller(t, src, sink, Config{Backfill: 2 * time.Hour, Metrics: m, Retry: Retry{Attempts: 3}})
			err = p.Poll(ctx)
			if tt.code == "" && err != nil {
				t.Fatal(err)
			}
			if tt.code != "" {
				wantCode(t, err, tt.code)
				if !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("error %q does not say %q", err, tt.msg)
				}
				if p.Status()[0].LastError == "" {
					t.Fatal("status does not show the error")
				}
			}
			if got := len(src.Calls()); got != tt.calls {
				t.Fatalf("calls=%d, want %d", got, tt.calls)
			}
			if got := clock.Sleeps(); !equalDurations(got, tt.sleeps) {
				t.Fatalf("sleeps=%v, want %v", got, tt.sleeps)
			}
			if got := len(sink.Points("DE", forecast.SignalLifecycle)); got != tt.stored {
				t.Fatalf("stored %d points, want %d", got, tt.stored)
			}
			if got := testutil.ToFloat64(m.requests.WithLabelValues("fake", OutcomeRateLimited)); got != tt.rateLimit {
				t.Fatalf("rate_limited requests=%v, want %v", got, tt.rateLimit)
			}
			if got := testutil.ToFloat64(m.retries.WithLabelValues("fake")); got != float64(len(tt.sleeps)) {
				t.Fatalf("retries=%v, want %d", got, len(tt.sleeps))
			}
		})
	}
}

func TestPollRecoversAfterOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := NewManualClock(t0.Add(5*time.Hour + 5*time.Minute))
	down := true
	src := &fakeSource{name: "fake", clock: clock, answer: func(_ int, from, to time.Time) (Batch, error) {
		if down {
			return Batch{}, unavailable(503, 0)
		}
		return hourlyAnswer(0, from, to)
	}}
	sink := NewMemorySink()
	if err := sink.Upsert(ctx, "DE", forecast.SignalLifecycle, []Point{{Time: t0.Add(3 * time.Hour), Value: 1}}); err != nil {
		t.Fatal(err)
	}
	p := newPoller(t, src, sink, Config{Retry: Retry{Attempts: 2}})
	wantCode(t, p.Poll(ctx), forecast.EUNAVAILABLE)

	// The upstream comes back three hours later: the next round starts
	// from the sink's latest hour, not from where the last round began.
	down = false
	clock.Add(3 * time.Hour)
	if err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	calls := src.Calls()
	last := calls[len(calls)-1]
	if !last.from.Equal(t0.Add(4*time.Hour)) || !last.to.Equal(t0.Add(8*time.Hour)) {
		t.Fatalf("after the outage: call [%v, %v), want [04:00, 08:00)", last.from, last.to)
	}
	if n := len(sink.Points("DE", forecast.SignalLifecycle)); n != 5 {
		t.Fatalf("stored %d points, want 5 (03:00–07:00)", n)
	}
}

func TestPollRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := NewManualClock(t0.Add(24 * time.Hour))
	src := &fakeSource{name: "fake", clock: clock, limits: Limits{MaxSpan: time.Hour}, answer: hourlyAnswer}
	other := &fakeSource{name: "fake", clock: clock, limits: Limits{MaxSpan: time.Hour}, answer: hourlyAnswer}
	p, err := New(Config{
		Sink: NewMemorySink(),
		Feeds: []Feed{
			{Source: src, Zone: "DE", Signal: forecast.SignalLifecycle},
			{Source: other, Zone: "FR", Signal: forecast.SignalLifecycle},
		},
		Rates:    map[string]Rate{"fake": {PerSecond: 0.5, Burst: 2}},
		Backfill: 6 * time.Hour,
		Clock:    clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	calls := append(src.Calls(), other.Calls()...)
	if len(calls) != 12 {
		t.Fatalf("%d calls, want 12 (6 hours × 2 feeds)", len(calls))
	}
	// Two at once (the burst), then one every 2 s, across both feeds of
	// the source: no two requests closer than the rate allows.
	for i := 2; i < len(calls); i++ {
		if got, want := calls[i].at.Sub(calls[i-2].at), 2*time.Second; got < want {
			t.Fatalf("calls %d and %d are %v apart, want ≥ %v", i-2, i, got, want)
		}
	}
	if got, want := calls[len(calls)-1].at.Sub(calls[0].at), 20*time.Second; got != want {
		t.Fatalf("12 calls took %v, want %v", got, want)
	}
}

func TestPollAggregatesFinePoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := NewManualClock(t0.Add(2*time.Hour + 40*time.Minute))
	src := &fakeSource{name: "fake", clock: clock, answer: func(_ int, from, _ time.Time) (Batch, error) {
		// 5-minute points from the start up to now, the second hour
		// shifted by +1 for every point, and a point past the range.
		b := Batch{Period: 5 * time.Minute, Duplicates: 1}
		for t := from; t.Before(t0.Add(2*time.Hour + 35*time.Minute)); t = t.Add(5 * time.Minute) {
			b.Points = append(b.Points, Point{Time: t, Value: float64(t.Hour()*100 + t.Minute()/5)})
		}
		return b, nil
	}}
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := NewMemorySink()
	p := newPoller(t, src, sink, Config{Backfill: 2 * time.Hour, Metrics: m})
	if err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	assertPoints(t, sink.Points("DE", forecast.SignalLifecycle), []Point{
		{Time: t0, Value: 5.5},
		{Time: t0.Add(time.Hour), Value: 105.5},
	})
	if got := testutil.ToFloat64(m.dropped.WithLabelValues("fake", DropOutside)); got != 7 {
		t.Fatalf("out_of_range=%v, want 7", got)
	}
	if got := testutil.ToFloat64(m.dropped.WithLabelValues("fake", DropDuplicate)); got != 1 {
		t.Fatalf("duplicates=%v, want 1", got)
	}
	if got := testutil.ToFloat64(m.points.WithLabelValues("fake", "DE", "lifecycle")); got != 2 {
		t.Fatalf("points=%v, want 2", got)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := NewManualClock(t0.Add(3 * time.Hour))
	src := &fakeSource{name: "fake", clock: clock}
	src.answer = func(n int, from, to time.Time) (Batch, error) {
		if n == 2 {
			cancel()
		}
		return hourlyAnswer(n, from, to)
	}
	p := newPoller(t, src, NewMemorySink(), Config{Interval: time.Hour, Backfill: time.Hour})
	if err := p.Run(ctx); err != nil {
		t.Fatalf("Run=%v, want nil", err)
	}
	if got := len(src.Calls()); got != 3 {
		t.Fatalf("%d calls, want 3 (one per round, an hour apart)", got)
	}
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(t0)
	src := &fakeSource{name: "fake", clock: clock, answer: hourlyAnswer}
	feed := Feed{Source: src, Zone: "DE", Signal: forecast.SignalLifecycle}
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{name: "no sink", cfg: Config{Feeds: []Feed{feed}}, field: "sink"},
		{name: "no feeds", cfg: Config{Sink: NewMemorySink()}, field: "feeds"},
		{name: "lower-case zone", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{{Source: src, Zone: "de", Signal: "direct"}}}, field: "feeds"},
		{name: "unknown signal", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{{Source: src, Zone: "DE", Signal: "average"}}}, field: "feeds"},
		{name: "no source", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{{Zone: "DE", Signal: "direct"}}}, field: "feeds"},
		{name: "fed twice", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{feed, feed}}, field: "feeds"},
		{name: "rate of unknown source", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{feed}, Rates: map[string]Rate{"other": {1, 1}}}, field: "rates"},
		{name: "zero rate", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{feed}, Rates: map[string]Rate{"fake": {0, 1}}}, field: "rates"},
		{name: "negative interval", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{feed}, Interval: -time.Second}, field: "interval"},
		{name: "negative attempts", cfg: Config{Sink: NewMemorySink(), Feeds: []Feed{feed}, Retry: Retry{Attempts: -1}}, field: "retry.attempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			wantCode(t, err, forecast.EINVALID)
			if got := forecast.ErrorField(err); got != tt.field {
				t.Fatalf("field=%q, want %q", got, tt.field)
			}
		})
	}
}

func TestPollSinkError(t *testing.T) {
	t.Parallel()
	clock := NewManualClock(t0.Add(3 * time.Hour))
	src := &fakeSource{name: "fake", clock: clock, answer: hourlyAnswer}
	p := newPoller(t, src, failingSink{}, Config{})
	err := p.Poll(context.Background())
	wantCode(t, err, forecast.EUNAVAILABLE)
	if len(src.Calls()) != 0 {
		t.Fatal("fetched although the sink could not tell where to start")
	}
}

type failingSink struct{}

func (failingSink) Upsert(context.Context, forecast.Zone, forecast.Signal, []Point) error {
	return errors.New("unreachable")
}

func (failingSink) Latest(context.Context, forecast.Zone, forecast.Signal) (time.Time, bool, error) {
	return time.Time{}, false, forecast.Errorf(forecast.EUNAVAILABLE, "database down")
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
