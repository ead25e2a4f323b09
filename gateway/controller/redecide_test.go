package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold"
)

// TestBetter: a hold moves only to another start or zone, not past its release-by,
// whose forecast beats the held start's by more than the gain.
func TestBetter(t *testing.T) {
	t.Parallel()
	cur := forecast.Window{Start: lat(10, 0), Mean: 400}
	tests := []struct {
		name  string
		best  forecast.Window
		share float64
		moved bool
	}{
		{"much lower", forecast.Window{Start: lat(3, 0), Mean: 200}, 0.5, true},
		{"just above the gain", forecast.Window{Start: lat(3, 0), Mean: 379}, 0.0525, true},
		{"at the gain", forecast.Window{Start: lat(3, 0), Mean: 380}, 0.05, false},
		{"the same start", forecast.Window{Start: lat(10, 0), Mean: 100}, 0, false},
		{"the same start in another zone", forecast.Window{Zone: "GB", Start: lat(10, 0), Mean: 200}, 0.5, true},
		{"past release-by", forecast.Window{Start: lat(13, 0), Mean: 100}, 0, false},
		{"worse", forecast.Window{Start: lat(3, 0), Mean: 500}, -0.25, false},
	}
	for _, tc := range tests {
		share, moved := better(cur, tc.best, lat(12, 0), 0.05)
		if moved != tc.moved || (moved && abs(share-tc.share) > 1e-9) {
			t.Errorf("%s: share %v moved %v, want %v %v", tc.name, share, moved, tc.share, tc.moved)
		}
	}
	if _, moved := better(forecast.Window{Start: lat(10, 0)}, forecast.Window{Start: lat(3, 0), Mean: -1}, lat(12, 0), 0.05); moved {
		t.Error("a held window without a positive mean moved")
	}
}

// together answers as its meanScheduler once two questions are in flight
// at once (each waits for the other until its context ends).
type together struct {
	*meanScheduler
	mu  sync.Mutex
	n   int
	two chan struct{}
}

func (s *together) Schedule(ctx context.Context, req gateway.Request) (gateway.Decision, error) {
	s.mu.Lock()
	if s.n++; s.n == 2 {
		close(s.two)
	}
	s.mu.Unlock()
	select {
	case <-s.two:
		return s.meanScheduler.Schedule(ctx, req)
	case <-ctx.Done():
		return gateway.Decision{}, ctx.Err()
	}
}

// TestCompareAsksAtOnce: the best window and the held one are asked of
// the gateway at once (a slow gateway costs a re-decision or a move off an
// unavailable place one timeout, not two), each answer where it belongs.
func TestCompareAsksAtOnce(t *testing.T) {
	t.Parallel()
	s := &together{meanScheduler: &meanScheduler{means: map[forecast.Zone]float64{"NL": 400, "GB": 200}}, two: make(chan struct{})}
	d := &redecider{sched: s, timeout: 10 * time.Second}
	best, cur, err := d.compare(context.Background(), time.Hour, ask{[]string{"NL", "GB"}, lat(1, 10), lat(13, 0)}, ask{[]string{"NL"}, lat(10, 0), lat(11, 0)})
	if err != nil {
		t.Fatalf("asked one after the other: %v", err)
	}
	if best.Zone != "GB" || !best.Start.Equal(lat(2, 0)) || cur.Zone != "NL" || !cur.Start.Equal(lat(10, 0)) || cur.Mean != 500 {
		t.Errorf("best %+v, held %+v; want GB at 02:00, NL at 10:00 (500)", best, cur)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestRedecideSchedule: asked once per forecast hour, not in the hour a
// workload is first seen (its decision used that hour's forecast), and
// woken at the next hour or its release, whichever is first.
func TestRedecideSchedule(t *testing.T) {
	t.Parallel()
	d := &redecider{asked: map[string]time.Time{}}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{{lat(1, 10), false}, {lat(1, 50), false}, {lat(2, 0), true}, {lat(2, 30), false}, {lat(4, 5), true}} {
		if got := d.due("ns/job", c.now); got != c.want {
			t.Errorf("due at %v = %v, want %v", c.now.Format(time.Kitchen), got, c.want)
		}
	}
	d.forget("ns/job")
	if d.due("ns/job", lat(5, 0)) {
		t.Error("due when first seen after forget")
	}
	if got := nextAsk(lat(1, 10), lat(5, 0)); !got.Equal(lat(2, 0)) {
		t.Errorf("nextAsk = %v, want the next hour", got)
	}
	if got := nextAsk(lat(1, 10), lat(1, 40)); !got.Equal(lat(1, 40)) {
		t.Errorf("nextAsk = %v, want the release", got)
	}
}

// TestRedecideMovesPromise: a move adds its forecast gain to the promise,
// which stays a saving against running at once at admission in the
// baseline zone: a Job decided in NL at 10:00 (500 g/kWh by the forecast)
// promising 20 % against a baseline of 625 g/kWh, 1 kW for 1 h (125 g),
// moved to GB at 02:00 (220 g/kWh by the newer forecast, NL at 10:00 now
// 500): 405 g and 64.8 %, re-signed with its baseline zone.
func TestRedecideMovesPromise(t *testing.T) {
	t.Parallel()
	d, a := heldAnnotations("job", true, false)
	a[hold.AnnotationProvenance] = `{"start":"` + lat(10, 0).Format(time.RFC3339) + `","end":"` + lat(11, 0).Format(time.RFC3339) +
		`","zone":"NL","mean_intensity":500,"savings_pct":20}`
	a[hold.AnnotationSavingsPct], a[hold.AnnotationAvoidedGrams], a[hold.AnnotationPowerWatts], a[hold.AnnotationBaselineZone] = "20.0", "125.0", "1000", "PL"
	a[hold.AnnotationSignature] = placeSigner.Sign(hold.Subject{Kind: "job", Namespace: "ns", Name: "w"}, a)
	r := jobReleaser()
	obj, _, events := redecideOnce(t, r, pinnedJob(a), d)
	got := obj.GetAnnotations()
	if got[hold.AnnotationZone] != "GB" || got[hold.AnnotationAvoidedGrams] != "405.0" || got[hold.AnnotationSavingsPct] != "64.8" || got[hold.AnnotationBaselineZone] != "PL" {
		t.Errorf("after the move: zone %s, avoided %s g, saving %s %%, baseline %s; want GB, 405.0, 64.8, PL",
			got[hold.AnnotationZone], got[hold.AnnotationAvoidedGrams], got[hold.AnnotationSavingsPct], got[hold.AnnotationBaselineZone])
	}
	if g := testutil.ToFloat64(r.metrics.redecisionGain.WithLabelValues("ns")); abs(g-280) > 1e-9 {
		t.Errorf("estimated gain %v g, want 280", g)
	}
	if len(events) != 1 || !strings.Contains(events[0], "promised saving now 64.8% (405.0 g)") {
		t.Errorf("events %v, want the new promise", events)
	}
	// Without a provenance to read the baseline from, the saving in
	// percent stays; the grams still move.
	delete(a, hold.AnnotationProvenance)
	if _, ok := hold.BaselineMean(a); ok {
		t.Error("a baseline without a provenance")
	}
	if g, ok := repromise(a, forecast.Window{Mean: 500}, forecast.Window{Mean: 220}, time.Hour); !ok || g != 280 || a[hold.AnnotationSavingsPct] != "20.0" || a[hold.AnnotationAvoidedGrams] != "405.0" {
		t.Errorf("repromise without a provenance: %v %v, %v", g, ok, a)
	}
	// A workload sized by the webhook (no declared power) moves its grams
	// by its estimate; one with neither keeps them.
	delete(a, hold.AnnotationPowerWatts)
	a[hold.AnnotationEstimatedPower], a[hold.AnnotationAvoidedGrams] = "500", "62.5"
	if g, ok := repromise(a, forecast.Window{Mean: 500}, forecast.Window{Mean: 220}, time.Hour); !ok || g != 140 || a[hold.AnnotationAvoidedGrams] != "202.5" {
		t.Errorf("repromise with an estimated power: %v %v, avoided %s g; want 140 true, 202.5", g, ok, a[hold.AnnotationAvoidedGrams])
	}
	delete(a, hold.AnnotationEstimatedPower)
	if g, ok := repromise(a, forecast.Window{Mean: 500}, forecast.Window{Mean: 220}, time.Hour); ok || g != 0 || a[hold.AnnotationAvoidedGrams] != "202.5" {
		t.Errorf("repromise without a power: %v %v, avoided %s g", g, ok, a[hold.AnnotationAvoidedGrams])
	}
}
