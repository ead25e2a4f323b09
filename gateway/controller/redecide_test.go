package controller

import (
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
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

func TestDecidedDuration(t *testing.T) {
	t.Parallel()
	got, err := decidedDuration(map[string]string{"carbongate.io/provenance": `{"start":"2021-06-01T05:00:00Z","end":"2021-06-01T08:00:00Z","zone":"DE"}`})
	if err != nil || got != 3*time.Hour {
		t.Fatalf("%v %v, want 3h", got, err)
	}
	for _, bad := range []string{"", "{}", `{"start":"2021-06-01T05:00:00Z","end":"2021-06-01T05:00:00Z"}`, "not json"} {
		if _, err := decidedDuration(map[string]string{"carbongate.io/provenance": bad}); err == nil {
			t.Errorf("provenance %q: no error", bad)
		}
	}
}
