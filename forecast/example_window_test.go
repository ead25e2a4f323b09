package forecast_test

import (
	"fmt"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// A 90-minute job that may start from 00:20 and must finish by 06:00, placed
// on a 15-minute grid across two zones.
func ExampleSearch() {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	res, err := forecast.Search(forecast.Query{
		Duration:      90 * time.Minute,
		EarliestStart: t0.Add(20 * time.Minute),
		Deadline:      t0.Add(6 * time.Hour),
		Step:          15 * time.Minute,
	}, []forecast.Candidate{
		{Zone: "PL", Series: forecast.Series{Start: t0, Values: []float64{700, 650, 640, 660, 690, 720}}},
		{Zone: "SE", Series: forecast.Series{Start: t0, Values: []float64{45, 30, 20, 20, 40, 45}}},
		{Zone: "DE", Series: forecast.Series{Start: t0, Values: []float64{380}}}, // too short
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := res.Best
	fmt.Printf("best: %s %s–%s %.2f g/kWh\n", b.Zone, b.Start.Format("15:04"), b.End.Format("15:04"), b.Mean)
	for _, w := range res.PerZone {
		fmt.Printf("%s from %s: %.2f\n", w.Zone, w.Start.Format("15:04"), w.Mean)
	}
	for _, z := range res.Infeasible {
		fmt.Printf("%s: %s\n", z.Zone, z.Reason)
	}

	// Output:
	// best: SE 02:00–03:30 20.00 g/kWh
	// SE from 02:00: 20.00
	// PL from 01:30: 643.33
	// DE: forecast covers only 1h0m0s, less than the duration 1h30m0s
}

// The run-now baseline: the mean over the job's duration from its earliest
// start, partial hours weighted by their overlap.
func ExampleMeanOver() {
	t0 := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	s := forecast.Series{Start: t0, Values: []float64{100, 200, 300}}
	m, err := forecast.MeanOver(s, t0.Add(30*time.Minute), time.Hour)
	fmt.Println(m, err)
	_, err = forecast.MeanOver(s, t0.Add(2*time.Hour), 2*time.Hour)
	fmt.Println(forecast.ErrorCode(err), forecast.ErrorField(err))
	// Output:
	// 150 <nil>
	// infeasible duration
}
