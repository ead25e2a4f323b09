//go:build interop

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// result is one request of the load.
type result struct {
	at      time.Time // sent
	latency time.Duration
	resp    scheduleResponse
	err     error
}

// openLoop sends rate schedule requests/s to the gateway at base (see
// openLoopFunc) until stop returns true, and returns every result.
func openLoop(hc *http.Client, base string, rate int, stop func() bool) []result {
	return openLoopFunc(rate, stop, func(ctx context.Context) result {
		t0 := time.Now()
		r, err := schedule(ctx, hc, base)
		return result{at: t0, latency: time.Since(t0), resp: r, err: err}
	})
}

// openLoopFunc calls fn rate times a second, each call on its own
// goroutine with a 5 s deadline (so a slow answer delays no later
// request), until stop returns true, and returns every result.
func openLoopFunc[R any](rate int, stop func() bool, fn func(context.Context) R) []R {
	var (
		mu  sync.Mutex
		out []R
		wg  sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for range tick.C {
		if stop() {
			break
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r := fn(ctx)
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// TestZoneServerKilledUnderLoad: 500 schedule requests/s while the SE
// model server is killed (SIGKILL) before an hour boundary. When the
// gateway's clock crosses the hour its cache recomputes every zone: SE now
// fails over to the remote generic model. Every request must succeed, with
// p99 under 100 ms, each labelled with the step that really answered:
// source zone before the hour (the forecast issued by SE's own model, still
// valid), generic after it with the reason naming the zone step's failure.
func TestZoneServerKilledUnderLoad(t *testing.T) {
	c := startCluster(t)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	t.Cleanup(hc.CloseIdleConnections)
	hour := time.Date(2021, 6, 1, 6, 0, 0, 0, time.UTC)
	r, err := schedule(context.Background(), hc, c.gateway)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clock.Now.Before(hour.Add(-5 * time.Second)) {
		t.Fatalf("gateway clock at %v: started too slowly to kill SE's server before %v", r.Clock.Now, hour)
	}
	start := time.Now()
	killAt := start.Add(2 * time.Second)
	// The load runs until the gateway's clock is 8 s past the hour.
	end := start.Add(hour.Add(8 * time.Second).Sub(r.Clock.Now))
	var killOnce sync.Once
	results := openLoop(hc, c.gateway, 500, func() bool {
		if time.Now().After(killAt) {
			killOnce.Do(c.servers["SE"].Kill)
		}
		return time.Now().After(end)
	})

	var lat []time.Duration
	var failed int
	sources := map[string]int{} // SE's provenance: before/after the hour
	for _, res := range results {
		lat = append(lat, res.latency)
		if res.err != nil {
			if failed++; failed <= 5 {
				t.Errorf("request at %v failed: %v", res.at.Sub(start), res.err)
			}
			continue
		}
		p := res.resp.Provenance["SE"]
		when := "before"
		if !res.resp.Clock.Now.Before(hour) {
			when = "after"
		}
		sources[when+" "+p.Source]++
		if p.Source == "generic" && !strings.Contains(p.Reason, "remote zone") {
			t.Errorf("SE generic without the zone step's failure in its reason: %+v", p)
		}
		for _, z := range []string{"DE", "US-CAL-CISO"} {
			if q := res.resp.Provenance[z]; q.Source != "zone" {
				t.Errorf("%s: provenance %+v, want zone (its server is up)", z, q)
			}
		}
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	t.Logf("%d requests in %v, %d failed; p50 %v p99 %v max %v; SE provenance %v",
		len(results), time.Since(start).Round(time.Millisecond), failed, p50, p99, lat[len(lat)-1], sources)
	if failed > 0 {
		t.Fatalf("%d of %d schedule requests failed", failed, len(results))
	}
	if p99 >= 100*time.Millisecond {
		t.Errorf("p99 %v, want < 100ms", p99)
	}
	if sources["before zone"] == 0 || sources["after generic"] == 0 || sources["after zone"] > 0 {
		t.Errorf("SE provenance %v: want zone before the hour and only generic after it", sources)
	}
}
