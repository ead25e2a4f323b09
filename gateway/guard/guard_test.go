package guard_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/guard"
)

// clock is a settable clock for the window.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newGuard(tb testing.TB, cfg guard.Config) (*guard.Guard, *clock) {
	tb.Helper()
	c := &clock{t: time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Now = c.Now
	g, err := guard.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return g, c
}

var ranked = []forecast.Zone{"SE", "DE", "PL"}

func TestIdenticalBurstIsSpread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		share    float64
		min      int
		n        int
		wantBest int // decisions to ranked[0]
	}{
		{"half", 0.5, 10, 100, 50},
		{"half, min 30", 0.5, 30, 100, 50},
		{"third", 1.0 / 3, 10, 99, 33},
		{"min above the burst", 0.5, 200, 100, 100},
		{"few", 0.5, 10, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, _ := newGuard(t, guard.Config{Share: tt.share, MinCount: tt.min})
			got := map[forecast.Zone]int{}
			var capped int
			for range tt.n {
				i, c := g.Admit(ranked)
				got[ranked[i]]++
				if i > 0 {
					capped++
					if len(c) != i || c[0].Zone != "SE" || c[0].Share <= tt.share {
						t.Fatalf("pick %d with capped %+v", i, c)
					}
				} else if c != nil {
					t.Fatalf("pick 0 with capped %+v", c)
				}
			}
			if got, want := got["SE"], tt.wantBest; got < want-1 || got > want+1 {
				t.Fatalf("best zone got %d of %d, want %d±1 (all: %v)", got, tt.n, want, got)
			}
			if got["SE"]+got["DE"]+got["PL"] != tt.n || capped != tt.n-got["SE"] {
				t.Fatalf("decisions %v, capped %d", got, capped)
			}
			counts, total := g.Counts()
			if total != tt.n || counts["SE"] != got["SE"] {
				t.Fatalf("Counts()=%v, %d; want %v, %d", counts, total, got, tt.n)
			}
		})
	}
}

func TestBestStaysWhenEveryZoneIsOver(t *testing.T) {
	t.Parallel()
	g, _ := newGuard(t, guard.Config{Share: 0.3, MinCount: 1})
	for range 5 {
		g.Admit([]forecast.Zone{"SE"})
		g.Admit([]forecast.Zone{"DE"})
	}
	// Both hold 50% of the window, over the 30% cap: the best keeps the
	// decision and nothing is reported as diverted.
	if pick, c := g.Admit([]forecast.Zone{"SE", "DE"}); pick != 0 || c != nil {
		t.Fatalf("every zone over the cap: pick %d capped %+v", pick, c)
	}
	if pick, c := g.Admit([]forecast.Zone{"PL", "SE"}); pick != 0 || c != nil {
		t.Fatalf("a fresh zone: pick %d capped %+v", pick, c)
	}
}

func TestWindowSlides(t *testing.T) {
	t.Parallel()
	g, clk := newGuard(t, guard.Config{Share: 0.5, MinCount: 2, Window: time.Minute, Buckets: 6})
	for range 10 {
		g.Admit(ranked[:1])
	}
	if _, total := g.Counts(); total != 10 {
		t.Fatalf("total %d, want 10", total)
	}
	// Half a window later the first decisions still count.
	clk.add(30 * time.Second)
	if pick, _ := g.Admit(ranked); pick == 0 {
		t.Fatalf("SE should still be over the cap 30 s later")
	}
	// A whole window after the first ten they are gone: only the 11th
	// remains.
	clk.add(40 * time.Second)
	counts, total := g.Counts()
	if total != 1 || counts["SE"] != 0 {
		t.Fatalf("after the window: counts %v total %d, want only the 11th", counts, total)
	}
	if pick, c := g.Admit(ranked); pick != 0 || c != nil {
		t.Fatalf("after the window: pick %d capped %+v", pick, c)
	}
	// A clock that goes back counts into the newest bucket.
	clk.add(-time.Hour)
	g.Admit(ranked)
	if _, total := g.Counts(); total != 3 {
		t.Fatalf("after a clock step back: total %d, want 3", total)
	}
	// A long idle gap empties everything.
	clk.add(24 * time.Hour)
	if counts, total := g.Counts(); total != 0 || len(counts) != 0 {
		t.Fatalf("after a day: %v %d", counts, total)
	}
}

func TestOffAndEdges(t *testing.T) {
	t.Parallel()
	g, err := guard.New(guard.Config{})
	if err != nil || g != nil {
		t.Fatalf("New(zero config)=%v, %v; want nil, nil (off)", g, err)
	}
	for range 100 {
		if pick, c := g.Admit(ranked); pick != 0 || c != nil {
			t.Fatalf("nil guard: pick %d capped %v", pick, c)
		}
	}
	if pick, _ := g.Admit(nil); pick != -1 {
		t.Fatalf("empty ranking: pick %d, want -1", pick)
	}
	on, _ := newGuard(t, guard.Config{Share: 0.5})
	if pick, _ := on.Admit(nil); pick != -1 {
		t.Fatalf("empty ranking: pick %d, want -1", pick)
	}
	if cfg := on.Config(); cfg.Window != guard.DefaultWindow || cfg.MinCount != guard.DefaultMinCount || cfg.Buckets != guard.DefaultBuckets {
		t.Fatalf("defaults not filled: %+v", cfg)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   guard.Config
		field string // "" = valid
	}{
		{"zero", guard.Config{}, ""},
		{"half", guard.Config{Share: 0.5, Window: time.Minute, MinCount: 5}, ""},
		{"share one", guard.Config{Share: 1}, "zone_cap_share"},
		{"negative share", guard.Config{Share: -0.1}, "zone_cap_share"},
		{"NaN share", guard.Config{Share: nan()}, "zone_cap_share"},
		{"negative window", guard.Config{Share: 0.5, Window: -time.Second}, "zone_cap_window"},
		{"window too short", guard.Config{Share: 0.5, Window: time.Microsecond}, "zone_cap_window"},
		{"negative min", guard.Config{Share: 0.5, MinCount: -1}, "zone_cap_min"},
		{"too many buckets", guard.Config{Share: 0.5, Buckets: 1 << 20}, "zone_cap_buckets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			if got := forecast.ErrorField(err); got != tt.field {
				t.Fatalf("Validate()=%v, want field %q", err, tt.field)
			}
			if _, err2 := guard.New(tt.cfg); (err2 == nil) != (err == nil) {
				t.Fatalf("New and Validate disagree: %v vs %v", err2, err)
			}
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestConcurrentAdmit(t *testing.T) {
	t.Parallel()
	g, clk := newGuard(t, guard.Config{Share: 0.5, MinCount: 10})
	var wg sync.WaitGroup
	const workers, each = 8, 250
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				g.Admit(ranked)
				if w == 0 && i%50 == 0 {
					clk.add(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	counts, total := g.Counts()
	if total != workers*each {
		t.Fatalf("total %d, want %d", total, workers*each)
	}
	// The check and the count happen under one lock, so concurrent
	// decisions cannot all slip under the cap.
	if se := counts["SE"]; se > total/2+1 {
		t.Fatalf("SE got %d of %d decisions", se, total)
	}
}

func BenchmarkAdmit(b *testing.B) {
	for _, zones := range []int{2, 12, 256} {
		b.Run(fmt.Sprintf("zones=%d", zones), func(b *testing.B) {
			r := make([]forecast.Zone, zones)
			for i := range r {
				r[i] = forecast.Zone(fmt.Sprintf("Z%d", i))
			}
			g, err := guard.New(guard.Config{Share: 0.5})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var sink int
			for b.Loop() {
				i, _ := g.Admit(r)
				sink += i
			}
			_ = sink
		})
	}
}

func ExampleGuard_Admit() {
	g, _ := guard.New(guard.Config{Share: 0.5, MinCount: 2})
	for range 5 {
		pick, capped := g.Admit([]forecast.Zone{"SE", "DE"})
		fmt.Print(pick)
		for _, c := range capped {
			fmt.Printf(" (%s was over the cap with %.2f)", c.Zone, c.Share)
		}
		fmt.Println()
	}
	// Output:
	// 0
	// 0
	// 1 (SE was over the cap with 1.00)
	// 1 (SE was over the cap with 0.67)
	// 0
}
