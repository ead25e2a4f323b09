package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/carbongate/carbongate/models/ledger"
)

var l0 = time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)

func lat(h, m int) time.Time {
	return l0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

// TestSettle: when an account is final, and otherwise when to look again:
// at the end of the last hour either window overlaps, then every retry
// until the horizon, after which it is recorded partial.
func TestSettle(t *testing.T) {
	t.Parallel()
	r := &recorder{retry: 30 * time.Minute, horizon: 48 * time.Hour}
	// Admitted 00:30, ran 02:30–03:30: the windows' last hour ends 04:00.
	ran := func(s ledger.Status, cov float64) ledger.Entry {
		return ledger.Entry{Workload: ledger.Workload{AdmittedAt: lat(0, 30), Started: lat(2, 30), Ended: lat(3, 30)},
			Status: s, Coverage: cov, Duration: time.Hour}
	}
	tests := []struct {
		name     string
		e        ledger.Entry
		now      time.Time
		wait     time.Duration
		final    bool
		finalIs  ledger.Status
		coverage float64
	}{
		{"realized", ran(ledger.Realized, 1), lat(4, 0), 0, true, ledger.Realized, 1},
		{"no power", ran(ledger.NoPower, 0), lat(4, 0), 0, true, ledger.NoPower, 0},
		{"not started", ledger.Entry{Status: ledger.Pending}, lat(1, 0), 0, false, "", 0},
		{"running", ledger.Entry{Workload: ledger.Workload{Started: lat(2, 30)}, Status: ledger.Pending}, lat(3, 0), 0, false, "", 0},
		{"partial before its last hour ended", ran(ledger.Partial, 0.75), lat(3, 40), 20 * time.Minute, false, "", 0},
		{"partial after", ran(ledger.Partial, 0.75), lat(5, 0), 30 * time.Minute, false, "", 0},
		{"nothing observed, within the horizon", ran(ledger.Pending, 0), lat(51, 59), 30 * time.Minute, false, "", 0},
		{"partial at the horizon", ran(ledger.Partial, 0.75), lat(52, 0), 0, true, ledger.Partial, 0.75},
		{"nothing observed at the horizon", ran(ledger.Pending, 0), lat(60, 0), 0, true, ledger.Partial, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.e
			wait, final := r.settle(&e, tc.now)
			if wait != tc.wait || final != tc.final {
				t.Fatalf("wait %v final %v, want %v %v", wait, final, tc.wait, tc.final)
			}
			if final && (e.Status != tc.finalIs || e.Coverage != tc.coverage) {
				t.Errorf("final %s coverage %v, want %s %v", e.Status, e.Coverage, tc.finalIs, tc.coverage)
			}
		})
	}
	// Running at admission may end later than the run (a run released by
	// hand before its admission's window ended).
	early := ledger.Entry{Workload: ledger.Workload{AdmittedAt: lat(5, 10), Started: lat(5, 0), Ended: lat(6, 0)}, Duration: time.Hour}
	if got, want := lastHour(&early), lat(7, 0); !got.Equal(want) {
		t.Errorf("lastHour %v, want %v", got, want)
	}
}

// TestRecordedCounters: a saving goes to the avoided counter, a loss to the
// added one, each with the promise of the same workload beside it; other
// statuses only count the workload.
func TestRecordedCounters(t *testing.T) {
	t.Parallel()
	m := newMetrics(prometheus.NewRegistry())
	g := func(v float64) *float64 { return &v }
	m.recorded("batch", "enforce", ledger.Entry{Status: ledger.Realized, RealizedGrams: g(500), BaselineGrams: g(800), AvoidedGrams: g(300),
		Workload: ledger.Workload{PromisedGrams: 350, HasPromise: true}})
	m.recorded("batch", "enforce", ledger.Entry{Status: ledger.Realized, RealizedGrams: g(900), BaselineGrams: g(800), AvoidedGrams: g(-100),
		Workload: ledger.Workload{PromisedGrams: 50, HasPromise: true}})
	m.recorded("batch", "enforce", ledger.Entry{Status: ledger.Partial, Coverage: 0.5, Workload: ledger.Workload{PromisedGrams: 70, HasPromise: true}})
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"avoided", testutil.ToFloat64(m.realizedAvoided.WithLabelValues("batch", "enforce")), 300},
		{"added", testutil.ToFloat64(m.realizedAdded.WithLabelValues("batch", "enforce")), 100},
		{"promised of the realized", testutil.ToFloat64(m.realizedPromised.WithLabelValues("batch", "enforce")), 400},
		{"realized", testutil.ToFloat64(m.ledgerWorkloads.WithLabelValues("batch", "enforce", "realized")), 2},
		{"partial", testutil.ToFloat64(m.ledgerWorkloads.WithLabelValues("batch", "enforce", "partial")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestRecordEvent(t *testing.T) {
	t.Parallel()
	g := func(v float64) *float64 { return &v }
	reason, msg := recordEvent(ledger.Entry{Status: ledger.Realized, RealizedGrams: g(500), BaselineGrams: g(800), AvoidedGrams: g(300),
		Accounting: ledger.Accounting("lifecycle"), Workload: ledger.Workload{Zone: "SE", BaselineZone: "PL", Started: lat(2, 30), Ended: lat(3, 30), PromisedGrams: 350, HasPromise: true,
			PowerWatts: 37.5, PowerEstimated: true}})
	for _, want := range []string{"realized avoided 300.0 g", "promised 350.0 g", "location-based average", ") in PL would have emitted 800.0 g", "its power, 37.5 W, estimated"} {
		if reason != "Realized" || !strings.Contains(msg, want) {
			t.Errorf("realized: %s %q, want %q", reason, msg, want)
		}
	}
	reason, msg = recordEvent(ledger.Entry{Status: ledger.Partial, Coverage: 0.75, Reason: "hours not observed 48h0m0s after the run"})
	if reason != "RealizedPartial" || !strings.Contains(msg, "75% of the hours") {
		t.Errorf("partial: %s %q", reason, msg)
	}
}
