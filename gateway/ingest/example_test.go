package ingest_test

import (
	"fmt"
	"time"

	"github.com/carbongate/carbongate/gateway/ingest"
)

// Twelve 5-minute points make a complete hour, averaged over time; the
// next hour has only two points so far and is left for a later fetch.
func ExampleHourly() {
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	var pts []ingest.Point
	for i := range 14 {
		pts = append(pts, ingest.Point{Time: t0.Add(time.Duration(i) * 5 * time.Minute), Value: float64(400 + 10*i)})
	}
	for _, h := range ingest.Hourly(pts, 5*time.Minute) {
		fmt.Println(h.Time.Format(time.RFC3339), h.Value)
	}
	// Output:
	// 2024-01-15T10:00:00Z 455
}

// Answers come out of order, in any time zone and with repeats.
func ExampleNormalize() {
	plus2 := time.FixedZone("+02:00", 2*60*60)
	pts := []ingest.Point{
		{Time: time.Date(2024, 3, 6, 3, 0, 0, 0, plus2), Value: 530},
		{Time: time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC), Value: 520},
		{Time: time.Date(2024, 3, 6, 1, 0, 0, 0, time.UTC), Value: 530},
	}
	out, dups, conflicts := ingest.Normalize(pts)
	for _, p := range out {
		fmt.Println(p.Time.Format(time.RFC3339), p.Value)
	}
	fmt.Println("duplicates:", dups, "conflicts:", conflicts)
	// Output:
	// 2024-03-06T00:00:00Z 520
	// 2024-03-06T01:00:00Z 530
	// duplicates: 1 conflicts: 0
}
