package evaluate_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/models/evaluate"
)

// ExampleCompare gates a challenger against the champion on the issue
// times both versions have forecasts for.
func ExampleCompare() {
	ctx := context.Background()
	m := store.NewMemory()
	start := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := make([]store.Observation, 14*24)
	for i := range obs {
		obs[i] = store.Observation{Time: start.Add(time.Duration(i) * time.Hour), Value: 200}
	}
	if err := m.UpsertObserved(ctx, "DE", forecast.SignalDirect, obs); err != nil {
		fmt.Println(err)
		return
	}
	// Version 1 forecasts 220 (10 % off) on days 0-6, version 2 forecasts
	// 190 (5 % off) on days 3-9.
	var rows []store.ForecastRow
	for _, v := range []struct {
		version     string
		value       float64
		first, last int
	}{{"1", 220, 0, 7}, {"2", 190, 3, 10}} {
		for d := v.first; d < v.last; d++ {
			issued := start.AddDate(0, 0, d)
			for h := range 96 {
				rows = append(rows, store.ForecastRow{Zone: "DE", Signal: forecast.SignalDirect,
					ModelName: "carbon-forecaster-DE", ModelVersion: v.version, IssuedAt: issued,
					TargetTime: issued.Add(time.Duration(h) * time.Hour), Value: v.value, Lower: math.NaN(), Upper: math.NaN()})
			}
		}
	}
	if err := m.WriteForecasts(ctx, "example", nil, rows); err != nil {
		fmt.Println(err)
		return
	}
	v, err := evaluate.Compare(ctx, m, m, evaluate.Gate{
		Model: "carbon-forecaster-DE", Champion: "1", Challenger: "2", Metric: "mape_d1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on %s (%d issues): champion %.2f, challenger %.2f, promote %v\n",
		v.Metric, v.Window(), v.Issues, v.Champion, v.Challenger, v.Promote)
	// Output:
	// mape_d1 on 2021-01-04/2021-01-07 (4 issues): champion 10.00, challenger 5.00, promote true
}
