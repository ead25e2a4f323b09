package ingest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/test/testsupport"
)

// BenchmarkAnswerBurst: 100 concurrent calls (--vendor-burst 100) whose
// 2 MB answers arrive slowly, with no budget and with the default one. It
// reports the peak heap in use during the burst and the share of calls
// refused for the budget (they fail as unavailable and are retried).
func BenchmarkAnswerBurst(b *testing.B) {
	const calls, size = 100, 2 << 20
	answer := `{"pad":"` + strings.Repeat("x", size-10) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.Write([]byte(answer[:len(answer)/2]))
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
		w.Write([]byte(answer[len(answer)/2:]))
	}))
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: calls}
	b.Cleanup(tr.CloseIdleConnections)
	for _, bc := range []struct {
		name   string
		budget *oip.BodyBudget
	}{{"no-budget", nil}, {"budget", NewAnswerBudget()}} {
		b.Run(bc.name, func(b *testing.B) {
			c := Caller{Source: "bench", Client: &http.Client{Transport: tr}, Timeout: time.Minute, Budget: bc.budget}
			var peak uint64
			var refused atomic.Int64
			b.ReportAllocs()
			for b.Loop() {
				runtime.GC()
				stop := sampleHeap(&peak)
				var wg sync.WaitGroup
				for range calls {
					wg.Go(func() {
						var v struct{ Pad string }
						if err := c.Get(context.Background(), srv.URL, nil, "/", &v); err != nil {
							refused.Add(1)
						}
					})
				}
				wg.Wait()
				stop()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(refused.Load())/float64(b.N*calls), "refused-share")
			if bc.budget != nil {
				// The budget holds answers being read; decoded values and
				// garbage the GC has yet to collect come on top.
				goal := 4 * DefaultAnswerBudget
				testsupport.Goal(b, peak <= uint64(goal), "vendor answers: %d calls at once, %d MB answers: peak heap %.0f MiB with the answer budget (goal ≤ %d MiB), %.0f%% of calls refused",
					calls, size>>20, float64(peak)/(1<<20), goal>>20, 100*float64(refused.Load())/float64(b.N*calls))
			}
		})
	}
}

// sampleHeap records the largest heap in use into *peak every
// millisecond until the returned stop is called.
func sampleHeap(peak *uint64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
