package watttime

import (
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// TestPollerHourly: the sink holds the marginal signal of US-CAL-CISO up to
// 09:00; at 12:30 the poller asks WattTime for [10:00, 12:00) and stores
// the time-weighted mean of every complete hour, in gCO2/kWh.
func TestPollerHourly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fixture string
		want    []ingest.Point
	}{
		{name: "complete hours", fixture: "historical_CAISO_NORTH.json", want: []ingest.Point{
			{Time: t10, Value: 955 * LbsPerMWh},
			{Time: t10.Add(time.Hour), Value: 972.5 * LbsPerMWh},
		}},
		{name: "an hour with a hole is not stored", fixture: "historical_CAISO_NORTH_gap.json", want: []ingest.Point{
			{Time: t10, Value: 955 * LbsPerMWh, Estimated: true},
		}},
		{name: "shifted time zone", fixture: "historical_CAISO_NORTH_shifted.json", want: []ingest.Point{
			{Time: t10, Value: 955 * LbsPerMWh},
			{Time: t10.Add(time.Hour), Value: 972.5 * LbsPerMWh},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := ingest.NewManualClock(t10.Add(2*time.Hour + 30*time.Minute))
			a := newAPI(t, serve(t, tt.fixture))
			sink := ingest.NewMemorySink()
			before := ingest.Point{Time: t10.Add(-time.Hour), Value: 400}
			if err := sink.Upsert(ctx, "US-CAL-CISO", ingest.SignalMarginal, []ingest.Point{before}); err != nil {
				t.Fatal(err)
			}
			p, err := ingest.New(ingest.Config{
				Sink:  sink,
				Feeds: []ingest.Feed{{Source: a.client(t, clock, nil), Zone: "US-CAL-CISO", Signal: ingest.SignalMarginal}},
				Clock: clock,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Poll(ctx); err != nil {
				t.Fatal(err)
			}
			q := a.requests()[0].Query()
			if q.Get("start") != "2024-01-15T10:00:00Z" || q.Get("end") != "2024-01-15T12:00:00Z" {
				t.Fatalf("asked start=%s end=%s, want 10:00Z and 12:00Z", q.Get("start"), q.Get("end"))
			}
			got := sink.Points("US-CAL-CISO", ingest.SignalMarginal)
			want := append([]ingest.Point{before}, tt.want...)
			if len(got) != len(want) {
				t.Fatalf("stored %+v, want %+v", got, want)
			}
			for i := range got {
				g, w := got[i], want[i]
				if !g.Time.Equal(w.Time) || math.Abs(g.Value-w.Value) > 1e-9 || g.Estimated != w.Estimated {
					t.Fatalf("point %d=%+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestPollerFeedsOnlyMarginal: a lifecycle feed of WattTime fails with
// ENOTFOUND and is not retried.
func TestPollerFeedsOnlyMarginal(t *testing.T) {
	t.Parallel()
	clock := ingest.NewManualClock(t10)
	a := newAPI(t, serve(t, "historical_CAISO_NORTH.json"))
	p, err := ingest.New(ingest.Config{
		Sink:  ingest.NewMemorySink(),
		Feeds: []ingest.Feed{{Source: a.client(t, clock, nil), Zone: "US-CAL-CISO", Signal: forecast.SignalLifecycle}},
		Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, p.Poll(ctx), forecast.ENOTFOUND)
	if len(a.logins()) != 0 || len(clock.Sleeps()) != 0 {
		t.Fatal("asked or waited for a signal WattTime does not serve")
	}
}
