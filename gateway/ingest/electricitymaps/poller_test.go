package electricitymaps

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// poller returns a Poller of the DE lifecycle feed from c into sink, on a
// manual clock at now.
func poller(tb testing.TB, c *Client, sink ingest.Sink, now time.Time) (*ingest.Poller, *ingest.ManualClock) {
	tb.Helper()
	clock := ingest.NewManualClock(now)
	p, err := ingest.New(ingest.Config{
		Sink:   sink,
		Feeds:  []ingest.Feed{{Source: c, Zone: "DE", Signal: forecast.SignalLifecycle}},
		Rates:  map[string]ingest.Rate{Name: {PerSecond: 100, Burst: 10}},
		Clock:  clock,
		Jitter: func() float64 { return 0 },
		Retry:  ingest.Retry{Attempts: 3, Backoff: time.Second},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return p, clock
}

// TestResumeAfterOutage: the sink holds data up to T; the poller asks the
// API from T + 1 h on, and stores the hours up to the current one.
func TestResumeAfterOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		pastRange bool
		fixture   string
		latest    time.Time
		now       time.Time
		query     string // the query's start and end, when sent
		from, to  time.Time
	}{
		{name: "past-range from the latest stored hour", pastRange: true, fixture: "past_range_DE.json",
			latest: time.Date(2024, 3, 1, 5, 0, 0, 0, time.UTC), now: time.Date(2024, 3, 2, 10, 20, 0, 0, time.UTC),
			query: "2024-03-01T06:00:00Z 2024-03-02T10:00:00Z",
			from:  time.Date(2024, 3, 1, 6, 0, 0, 0, time.UTC), to: time.Date(2024, 3, 2, 10, 0, 0, 0, time.UTC)},
		{name: "history from the latest stored hour", fixture: "history_DE.json",
			latest: time.Date(2024, 3, 6, 10, 0, 0, 0, time.UTC), now: time.Date(2024, 3, 6, 19, 40, 0, 0, time.UTC),
			from: time.Date(2024, 3, 6, 11, 0, 0, 0, time.UTC), to: time.Date(2024, 3, 6, 19, 0, 0, 0, time.UTC)},
		{name: "history after an outage longer than a day", fixture: "history_DE.json",
			latest: time.Date(2024, 3, 4, 10, 0, 0, 0, time.UTC), now: time.Date(2024, 3, 6, 19, 40, 0, 0, time.UTC),
			from: time.Date(2024, 3, 5, 20, 0, 0, 0, time.UTC), to: time.Date(2024, 3, 6, 19, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, serve(t, tt.fixture))
			sink := ingest.NewMemorySink()
			if err := sink.Upsert(ctx, "DE", forecast.SignalLifecycle, []ingest.Point{{Time: tt.latest, Value: 1}}); err != nil {
				t.Fatal(err)
			}
			p, _ := poller(t, a.client(t, tt.pastRange, nil), sink, tt.now)
			if err := p.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			reqs := a.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if q := reqs[0].Query(); tt.query != "" && q.Get("start")+" "+q.Get("end") != tt.query {
				t.Fatalf("asked start=%s end=%s, want %s", q.Get("start"), q.Get("end"), tt.query)
			}
			pts := sink.Points("DE", forecast.SignalLifecycle)
			if want := 1 + int(tt.to.Sub(tt.from)/time.Hour); len(pts) != want {
				t.Fatalf("sink holds %d points, want %d", len(pts), want)
			}
			if !pts[1].Time.Equal(tt.from) || !pts[len(pts)-1].Time.Equal(tt.to.Add(-time.Hour)) {
				t.Fatalf("stored %v – %v, want %v – %v", pts[1].Time, pts[len(pts)-1].Time, tt.from, tt.to.Add(-time.Hour))
			}
		})
	}
}

func TestPollerRetries(t *testing.T) {
	t.Parallel()
	fail := func(status int, retryAfter string, times int) func(http.ResponseWriter, *http.Request, int) {
		ok := serve(t, "history_DE.json")
		return func(w http.ResponseWriter, r *http.Request, n int) {
			if n < times {
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				w.WriteHeader(status)
				w.Write([]byte(`{"message":"try later"}`))
				return
			}
			ok(w, r, n)
		}
	}
	tests := []struct {
		name     string
		handle   func(http.ResponseWriter, *http.Request, int)
		requests int
		sleeps   []time.Duration
		code     string
	}{
		{name: "429 with Retry-After, then success", handle: fail(429, "12", 1), requests: 2, sleeps: []time.Duration{12 * time.Second}},
		{name: "5xx retried, then success", handle: fail(503, "", 2), requests: 3, sleeps: []time.Duration{500 * time.Millisecond, time.Second}},
		{name: "persistent 5xx gives up", handle: fail(500, "", 100), requests: 3, sleeps: []time.Duration{500 * time.Millisecond, time.Second}, code: forecast.EUNAVAILABLE},
		{name: "401 is not retried", handle: fail(401, "", 100), requests: 1, code: forecast.EUNAUTHORIZED},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, tt.handle)
			sink := ingest.NewMemorySink()
			p, clock := poller(t, a.client(t, false, nil), sink, time.Date(2024, 3, 6, 19, 40, 0, 0, time.UTC))
			err := p.Poll(ctx)
			if tt.code == "" && err != nil {
				t.Fatal(err)
			}
			if tt.code != "" {
				wantCode(t, err, tt.code)
				if tt.code == forecast.EUNAVAILABLE && !strings.Contains(err.Error(), "gave up after 3 attempts") {
					t.Fatalf("error %q does not say it gave up", err)
				}
			}
			if got := len(a.requests()); got != tt.requests {
				t.Fatalf("%d requests, want %d", got, tt.requests)
			}
			got := clock.Sleeps()
			if len(got) != len(tt.sleeps) {
				t.Fatalf("sleeps=%v, want %v", got, tt.sleeps)
			}
			for i := range got {
				if got[i] != tt.sleeps[i] {
					t.Fatalf("sleeps=%v, want %v", got, tt.sleeps)
				}
			}
			if n := len(sink.Points("DE", forecast.SignalLifecycle)); (n == 23) != (tt.code == "") {
				t.Fatalf("sink holds %d points", n)
			}
		})
	}
}
