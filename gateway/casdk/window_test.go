package casdk

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2022, 6, 1, 0, 0, 0, 0, time.UTC)

// points5 are 5-minute points from t0.
func points5(vs ...float64) []point {
	out := make([]point, len(vs))
	for i, v := range vs {
		out[i] = point{Time: t0.Add(time.Duration(i) * 5 * time.Minute), Duration: 5 * time.Minute, Value: v}
	}
	return out
}

func values(ps []point) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.Value
	}
	return out
}

func near(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

// TestRollingAverageSDKExamples runs the examples of the SDK's
// EmissionsDataExtensions.RollingAverage documentation: 5-minute values and
// a 10-minute workload.
func TestRollingAverageSDKExamples(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   []float64
		want []float64
	}{
		{"the optimal single point is the last one, which a 10-minute job cannot use", []float64{10, 20, 30, 40, 5}, []float64{15, 25, 35, 22.5}},
		{"the optimal single point is the first one, a poor start", []float64{5, 55, 10, 10, 10}, []float64{30, 32.5, 10, 10}},
		{"the optimal single point is the centre one", []float64{12, 11, 10, 12, 13}, []float64{11.5, 10.5, 11, 12.5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := rollingAverage(points5(tt.in...), 10*time.Minute, time.Time{}, time.Time{})
			if !near(values(got), tt.want) {
				t.Fatalf("rolling average=%v, want %v", values(got), tt.want)
			}
			for i, p := range got {
				if want := t0.Add(time.Duration(i) * 5 * time.Minute); !p.Time.Equal(want) || p.Duration != 10*time.Minute {
					t.Errorf("window %d at %v for %v, want %v for 10m", i, p.Time, p.Duration, want)
				}
			}
		})
	}
}

// TestAverageOverPeriodSDKExamples runs the examples of the SDK's
// AverageOverPeriod documentation: hour-long points (01:00, 30), (02:00,
// 100), (03:00, 50).
func TestAverageOverPeriodSDKExamples(t *testing.T) {
	t.Parallel()
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	data := hourly(h(1), []float64{30, 100, 50})
	for _, tt := range []struct {
		name       string
		start, end time.Time
		want       float64
		ok         bool
	}{
		{"01:30 to 03:30 weighs each hour by the time used", h(1).Add(30 * time.Minute), h(3).Add(30 * time.Minute), 30.0/4 + 100.0/2 + 50.0/4, true},
		{"the whole three hours is the plain mean", h(1), h(4), (30.0 + 100 + 50) / 3, true},
		{"a period beyond the data is refused", h(2), h(5), 0, false},
		{"a period before the data is refused", h(0), h(2), 0, false},
		{"an empty period is refused", h(2), h(2), 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := averageOverPeriod(data, tt.start, tt.end)
			if ok != tt.ok || (ok && math.Abs(got-tt.want) > 1e-9) {
				t.Fatalf("average=%v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRollingAverageBounds(t *testing.T) {
	t.Parallel()
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	data := hourly(t0, []float64{10, 20, 30, 40, 50, 60})
	for _, tt := range []struct {
		name       string
		window     time.Duration
		start, end time.Time
		want       []float64
		starts     []time.Time
	}{
		{"no window: the points as they are", 0, time.Time{}, time.Time{}, []float64{10, 20, 30, 40, 50, 60}, nil},
		{"a two-hour window drops the partial window at the end", 2 * time.Hour, time.Time{}, time.Time{}, []float64{15, 25, 35, 45, 55}, nil},
		{"windows start at dataStartAt, between points", time.Hour, h(1.5), h(6),
			[]float64{25, 35, 45, 55}, []time.Time{h(1.5), h(2.5), h(3.5), h(4.5)}},
		{"dataEndAt is a completion deadline", time.Hour, t0, h(3), []float64{10, 20, 30}, nil},
		{"the first window is kept even past dataEndAt, as the SDK does", 2 * time.Hour, t0, h(1), []float64{15}, nil},
		{"a window longer than the data: none", 7 * time.Hour, time.Time{}, time.Time{}, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := rollingAverage(data, tt.window, tt.start, tt.end)
			if !near(values(got), tt.want) {
				t.Fatalf("windows=%v, want %v", values(got), tt.want)
			}
			for i, s := range tt.starts {
				if !got[i].Time.Equal(s) {
					t.Errorf("window %d starts %v, want %v", i, got[i].Time, s)
				}
			}
		})
	}
}

func TestFilterByDuration(t *testing.T) {
	t.Parallel()
	data := hourly(t0, []float64{1, 2, 3, 4})
	// Points ending after the start and beginning at or before the end: the
	// point beginning exactly at the end is kept, as the SDK keeps it.
	got := filterByDuration(data, t0.Add(90*time.Minute), t0.Add(3*time.Hour))
	if want := []float64{2, 3, 4}; !near(values(got), want) {
		t.Fatalf("filtered=%v, want %v", values(got), want)
	}
}

func TestOptimalReturnsEveryTie(t *testing.T) {
	t.Parallel()
	got := optimal(points5(3, 1, 2, 1, 5, 1))
	if len(got) != 3 {
		t.Fatalf("optimal=%v, want the three 1s", got)
	}
	for i, want := range []int{1, 3, 5} {
		if !got[i].Time.Equal(t0.Add(time.Duration(want) * 5 * time.Minute)) {
			t.Errorf("tie %d at %v, want point %d", i, got[i].Time, want)
		}
	}
	if optimal(nil) != nil {
		t.Error("optimal of no data is not empty")
	}
}
