package ledger

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// series serves observations from in-memory series: hours outside them
// are NaN, as a store answers.
type series map[forecast.Zone]forecast.Series

func (m series) Observed(_ context.Context, zone forecast.Zone, _ forecast.Signal, from, to time.Time) (forecast.Series, error) {
	out := forecast.Series{Start: from, Values: make([]float64, int(to.Sub(from)/forecast.Hour))}
	for i := range out.Values {
		v, ok := m[zone].At(from.Add(time.Duration(i) * forecast.Hour))
		if !ok {
			v = math.NaN()
		}
		out.Values[i] = v
	}
	return out, nil
}

var t0 = time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)

func at(h, m int) time.Time { return t0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }

func obs() series {
	nan := math.NaN()
	return series{
		"A": {Start: t0, Values: []float64{500, 400, 300, 200, 100}},
		"B": {Start: t0, Values: []float64{800, 800, 800, 800, 800}},
		"C": {Start: t0, Values: []float64{500, 400, 300, nan, 100}},
	}
}

// run is a 2 kW workload admitted at 00:30 that ran 02:30–03:30.
func run(zone forecast.Zone) Workload {
	return Workload{Namespace: "ns", Name: "job", Zone: zone, Signal: forecast.SignalLifecycle, PowerWatts: 2000,
		AdmittedAt: at(0, 30), Started: at(2, 30), Ended: at(3, 30), PromisedGrams: 350, HasPromise: true}
}

func TestAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type want struct {
		status                      Status
		coverage                    float64
		realized, baseline, avoided float64
	}
	tests := []struct {
		name string
		w    func() Workload
		want want
	}{
		// ran: 300×½ + 200×½ = 250 g/kWh·h × 2 kW = 500 g; at admission:
		// 500×½ + 400×½ = 450 × 2 = 900 g; avoided 400 g.
		{"realized, partial hours time-weighted", func() Workload { return run("A") }, want{Realized, 1, 500, 900, 400}},
		// the baseline in B: 800 × 1 h × 2 kW = 1600 g; avoided 1100 g.
		{"baseline in another zone", func() Workload { w := run("A"); w.BaselineZone = "B"; return w }, want{Realized, 1, 500, 1600, 1100}},
		// hour 03:00 of C is missing: 3 of the 4 hours are observed.
		{"partial", func() Workload { return run("C") }, want{Partial, 0.75, 0, 0, 0}},
		{"a loss is negative", func() Workload { w := run("B"); w.BaselineZone = "A"; return w }, want{Realized, 1, 1600, 900, -700}},
		{"no hour observed yet", func() Workload {
			w := run("A")
			w.AdmittedAt, w.Started, w.Ended = at(6, 0), at(7, 0), at(8, 0)
			return w
		}, want{Pending, 0, 0, 0, 0}},
		{"not started", func() Workload { w := run("A"); w.Started, w.Ended = time.Time{}, time.Time{}; return w }, want{Pending, 0, 0, 0, 0}},
		{"running", func() Workload { w := run("A"); w.Ended = time.Time{}; return w }, want{Pending, 0, 0, 0, 0}},
		{"deleted before it ran", func() Workload {
			w := run("A")
			w.Started, w.Ended, w.Deleted = time.Time{}, time.Time{}, true
			return w
		}, want{Deleted, 0, 0, 0, 0}},
		{"no power", func() Workload { w := run("A"); w.PowerWatts = 0; return w }, want{NoPower, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Account(ctx, obs(), tc.w())
			if err != nil {
				t.Fatal(err)
			}
			if e.Status != tc.want.status || math.Abs(e.Coverage-tc.want.coverage) > 1e-12 {
				t.Fatalf("status %s coverage %v (%s), want %s %v", e.Status, e.Coverage, e.Reason, tc.want.status, tc.want.coverage)
			}
			if e.Status != Realized {
				if e.RealizedGrams != nil || e.BaselineGrams != nil || e.AvoidedGrams != nil {
					t.Fatalf("a %s entry carries grams", e.Status)
				}
				return
			}
			for _, c := range []struct {
				name string
				got  *float64
				want float64
			}{{"realized", e.RealizedGrams, tc.want.realized}, {"baseline", e.BaselineGrams, tc.want.baseline}, {"avoided", e.AvoidedGrams, tc.want.avoided}} {
				if math.Abs(*c.got-c.want) > 1e-9 {
					t.Errorf("%s = %v g, want %v", c.name, *c.got, c.want)
				}
			}
			if e.EnergyKWh != 2 || e.Duration != time.Hour {
				t.Errorf("energy %v kWh over %v, want 2 kWh over 1h", e.EnergyKWh, e.Duration)
			}
		})
	}
}

func TestAccountEndBeforeStart(t *testing.T) {
	t.Parallel()
	w := run("A")
	w.Ended = w.Started
	_, err := Account(context.Background(), obs(), w)
	if forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("err = %v, want EINVALID", err)
	}
}

func TestAccounting(t *testing.T) {
	t.Parallel()
	if got := Accounting(forecast.SignalMarginal); got != "marginal (operating emissions rate, CO2 only)" {
		t.Errorf("marginal: %q", got)
	}
	if got := Accounting(forecast.SignalDirect); got != "location-based average (direct)" {
		t.Errorf("direct: %q", got)
	}
}

func TestTotals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := []Workload{run("A"), run("A"), run("C"), run("A"), run("A")}
	ws[1].HasPromise = false
	ws[3].Started, ws[3].Ended, ws[3].Deleted = time.Time{}, time.Time{}, true
	ws[4].Namespace = "other"
	var es []Entry
	for _, w := range ws {
		e, err := Account(ctx, obs(), w)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	got := Totals(es)
	if len(got) != 3 {
		t.Fatalf("%d totals, want 3 (ns/A, ns/C, other/A): %+v", len(got), got)
	}
	a := got[0]
	if a.Namespace != "ns" || a.Zone != "A" || a.Workloads != 3 || a.Realized != 2 || a.Deleted != 1 {
		t.Fatalf("ns/A = %+v", a)
	}
	// promised: 350 (realized) + 350 (deleted); realized twice 400 g.
	if a.PromisedGrams != 700 || a.PromisedRealized != 350 || a.AvoidedGrams != 800 || a.RealizedGrams != 1000 || a.BaselineGrams != 1800 {
		t.Fatalf("ns/A grams = %+v", a)
	}
	if c := got[1]; c.Zone != "C" || c.Partial != 1 || c.AvoidedGrams != 0 || c.PromisedGrams != 350 {
		t.Fatalf("ns/C = %+v", c)
	}
	if o := got[2]; o.Namespace != "other" || o.Realized != 1 {
		t.Fatalf("other/A = %+v", o)
	}
}
