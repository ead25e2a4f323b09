package forecast_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/test/testsupport"
)

// winSink keeps the benchmark's results alive.
var winSink forecast.Result

// BenchmarkSearch measures Search over 7 days of 5-minute candidate starts
// (2,017 slots for a 3-hour job in 171 forecast hours) for growing numbers of
// zones. The goal is under 5 ms per Search for 1,000 zones on one core; it
// reports ns per (zone × slot).
func BenchmarkSearch(b *testing.B) {
	const (
		hours = 7*24 + 3
		d     = 3 * time.Hour
		step  = 5 * time.Minute
	)
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	q := forecast.Query{Duration: d, EarliestStart: start, Step: step}
	slots := int((hours*time.Hour-d)/step) + 1
	for _, zones := range []int{12, 100, 1000} {
		r := rand.New(rand.NewPCG(uint64(zones), 7))
		cands := make([]forecast.Candidate, zones)
		for i := range cands {
			vals := make([]float64, hours)
			for h := range vals {
				vals[h] = 50 + 750*r.Float64()
			}
			cands[i] = forecast.Candidate{
				Zone:   forecast.Zone(fmt.Sprintf("Z%04d", i)),
				Series: forecast.Series{Start: start, Values: vals},
			}
		}
		b.Run(fmt.Sprintf("zones=%d", zones), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := forecast.Search(q, cands)
				if err != nil {
					b.Fatal(err)
				}
				winSink = res
			}
			perSearch := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(zones*slots), "ns/zone-slot")
			if zones == 1000 {
				testsupport.Goal(b, perSearch < 5*time.Millisecond, "window search, %d zones x %d slots: %v per search (goal < 5ms)", zones, slots, perSearch.Round(time.Microsecond))
			}
		})
	}
}
