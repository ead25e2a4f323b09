package ledger

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestAsOf: an hour not ended by the clock is unobserved, whatever the
// dataset holds (a replay clock's data hold its future); the workload is
// partial until every hour of both windows has ended, then realized as
// with the whole data, and the data are not changed.
func TestAsOf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := obs()
	w := run("A") // admitted 00:30, ran 02:30–03:30: hours 00–01 and 02–03
	full, err := Account(ctx, data, w)
	if err != nil || full.Status != Realized {
		t.Fatalf("with every hour: %+v, %v", full, err)
	}
	tests := []struct {
		name     string
		now      time.Time
		status   Status
		coverage float64
	}{
		{"the run's last hour has not started", at(3, 0), Partial, 0.75},
		{"the run's last hour under way", at(3, 59), Partial, 0.75},
		{"every hour ended", at(4, 0), Realized, 1},
		{"long after", at(40, 0), Realized, 1},
		{"before admission's hour ended", at(0, 45), Pending, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Account(ctx, AsOf(data, tc.now), w)
			if err != nil {
				t.Fatal(err)
			}
			if e.Status != tc.status || e.Coverage != tc.coverage {
				t.Fatalf("status %s coverage %v, want %s %v", e.Status, e.Coverage, tc.status, tc.coverage)
			}
			if e.Status == Realized && *e.AvoidedGrams != *full.AvoidedGrams {
				t.Errorf("avoided %v, want %v", *e.AvoidedGrams, *full.AvoidedGrams)
			}
		})
	}
	if v := data["A"].Values[3]; v != 200 {
		t.Errorf("the data changed: hour 3 is %v", v)
	}
}

// TestShadow: a shadow workload that ran at once is charged as if held to
// its decided start; what it really emitted is the run-at-admission side.
func TestShadow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ran := Workload{Zone: "A", Signal: "lifecycle", PowerWatts: 1000, AdmittedAt: at(0, 0), Started: at(0, 10), Ended: at(1, 10)}
	s := Shadow(ran, at(3, 0))
	if !s.AdmittedAt.Equal(at(0, 10)) || !s.Started.Equal(at(3, 0)) || !s.Ended.Equal(at(4, 0)) {
		t.Fatalf("shadow %+v, want admitted 00:10, run 03:00–04:00", s)
	}
	e, err := Account(ctx, obs(), s)
	if err != nil || e.Status != Realized {
		t.Fatalf("%+v %v", e, err)
	}
	// Really ran 00:10–01:10: 500×5/6 + 400×1/6 = 483.33 g; held to
	// 03:00–04:00 it would have emitted 200 g.
	if math.Abs(*e.BaselineGrams-483.333) > 0.01 || *e.RealizedGrams != 200 {
		t.Errorf("run at once %v g, held %v g; want 483.33, 200", *e.BaselineGrams, *e.RealizedGrams)
	}
	running := Workload{Started: at(0, 10)}
	if got := Shadow(running, at(3, 0)); !got.Ended.IsZero() {
		t.Errorf("running: ended %v, want still running", got.Ended)
	}
	if got := Shadow(Workload{Deleted: true}, at(3, 0)); !got.Deleted || !got.Started.IsZero() {
		t.Errorf("not started: %+v, want as it was", got)
	}
}
