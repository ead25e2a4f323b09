package ingest

import (
	"math"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	plus2 := time.FixedZone("+02:00", 2*3600)
	h := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Hour) }
	tests := []struct {
		name                 string
		in                   []Point
		want                 []Point
		wantDups, wantConfls int
	}{
		{name: "empty"},
		{
			name: "out of order is sorted",
			in:   []Point{{Time: h(2), Value: 3}, {Time: h(0), Value: 1}, {Time: h(1), Value: 2}},
			want: []Point{{Time: h(0), Value: 1}, {Time: h(1), Value: 2}, {Time: h(2), Value: 3}},
		},
		{
			name: "shifted zone is the same instant",
			in:   []Point{{Time: h(1), Value: 2}, {Time: h(0).In(plus2), Value: 1}, {Time: h(1).In(plus2), Value: 2}},
			want: []Point{{Time: h(0), Value: 1}, {Time: h(1), Value: 2}}, wantDups: 1,
		},
		{
			name: "conflict keeps the later revision",
			in: []Point{
				{Time: h(0), Value: 1, UpdatedAt: h(5)},
				{Time: h(0), Value: 9, UpdatedAt: h(3)},
			},
			want: []Point{{Time: h(0), Value: 1, UpdatedAt: h(5)}}, wantConfls: 1,
		},
		{
			name: "conflict without revisions keeps the later in the answer",
			in:   []Point{{Time: h(0), Value: 1}, {Time: h(0), Value: 9}, {Time: h(0), Value: 9}},
			want: []Point{{Time: h(0), Value: 9}}, wantConfls: 1, wantDups: 1,
		},
		{
			name: "estimation flag differs: conflict",
			in:   []Point{{Time: h(0), Value: 1, Estimated: true}, {Time: h(0), Value: 1}},
			want: []Point{{Time: h(0), Value: 1}}, wantConfls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, dups, confl := Normalize(tt.in)
			if dups != tt.wantDups || confl != tt.wantConfls {
				t.Fatalf("dups, conflicts=%d, %d, want %d, %d", dups, confl, tt.wantDups, tt.wantConfls)
			}
			assertPoints(t, got, tt.want)
		})
	}
}

func TestHourly(t *testing.T) {
	t.Parallel()
	five := func(hour, k int, v float64) Point {
		return Point{Time: t0.Add(time.Duration(hour)*time.Hour + time.Duration(k)*5*time.Minute), Value: v}
	}
	fullHour := func(hour int, v func(k int) float64) []Point {
		var out []Point
		for k := range 12 {
			out = append(out, five(hour, k, v(k)))
		}
		return out
	}
	ramp := func(k int) float64 { return float64(k * 10) } // mean 55
	tests := []struct {
		name   string
		in     []Point
		period time.Duration
		want   []Point
	}{
		{name: "complete hour is the mean", in: fullHour(0, ramp), period: 5 * time.Minute,
			want: []Point{{Time: t0, Value: 55}}},
		{name: "incomplete last hour is left out",
			in:     append(fullHour(0, ramp), five(1, 0, 1), five(1, 1, 1)),
			period: 5 * time.Minute, want: []Point{{Time: t0, Value: 55}}},
		{name: "hole in an hour leaves it out",
			in:     append(fullHour(0, ramp)[:5], fullHour(0, ramp)[6:]...),
			period: 5 * time.Minute},
		{name: "time-weighted: a point covers until the next one",
			in: []Point{
				{Time: t0, Value: 100},
				{Time: t0.Add(45 * time.Minute), Value: 200},
			},
			period: time.Hour, want: []Point{{Time: t0, Value: 125}}},
		{name: "estimated and revision carry over",
			in: func() []Point {
				p := fullHour(0, func(int) float64 { return 7 })
				p[3].Estimated, p[4].UpdatedAt = true, t0.Add(3*time.Hour)
				return p
			}(),
			period: 5 * time.Minute,
			want:   []Point{{Time: t0, Value: 7, Estimated: true, UpdatedAt: t0.Add(3 * time.Hour)}}},
		{name: "hourly points pass through",
			in:     []Point{{Time: t0, Value: 1}, {Time: t0.Add(time.Hour), Value: 2}},
			period: time.Hour,
			want:   []Point{{Time: t0, Value: 1}, {Time: t0.Add(time.Hour), Value: 2}}},
		{name: "NaN value leaves a hole",
			in:     []Point{{Time: t0, Value: math.NaN()}, {Time: t0.Add(time.Hour), Value: 2}},
			period: time.Hour,
			want:   []Point{{Time: t0.Add(time.Hour), Value: 2}}},
		{name: "no period", in: fullHour(0, ramp)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assertPoints(t, Hourly(tt.in, tt.period), tt.want)
		})
	}
}

func assertPoints(tb testing.TB, got, want []Point) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d points %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) || g.Time.Location() != time.UTC || math.Abs(g.Value-w.Value) > 1e-9 ||
			g.Estimated != w.Estimated || !g.UpdatedAt.Equal(w.UpdatedAt) {
			tb.Fatalf("point %d=%+v, want %+v (in UTC)", i, g, w)
		}
	}
}
