package backtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/backtest"
)

var day0 = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

// stepSeries is 100 for a week, then blocks of 24 hours with the given
// levels.
func stepSeries(levels ...float64) forecast.Series {
	v := make([]float64, 168, 168+24*len(levels))
	for i := range v {
		v[i] = 100
	}
	for _, l := range levels {
		for range 24 {
			v = append(v, l)
		}
	}
	return forecast.Series{Start: day0.Add(-168 * time.Hour), Values: v}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRunByHand(t *testing.T) {
	t.Parallel()
	// Persistence issued on day0 forecasts 100 throughout: lead days of
	// 125, 80, 100, 50 give MAPEs 20, 25, 0, 100. Issued the next day it
	// holds 125 against 80, 100, 50, 100: 56.25, 25, 150, 25. A third day
	// lacks actuals and is skipped.
	s := stepSeries(125, 80, 100, 50, 100)
	cands, err := backtest.Baselines("XX", forecast.SignalDirect, 168, 96)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := backtest.Run(context.Background(), backtest.Config{Signal: forecast.SignalDirect, From: day0, To: day0.AddDate(0, 0, 2)},
		[]backtest.Zone{{Zone: "XX", Series: s, Candidates: cands}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Issued["XX"], 2; got != want {
		t.Fatalf("issued=%d, want %d", got, want)
	}
	if got, want := rep.Skip["XX"], 1; got != want {
		t.Fatalf("skipped=%d, want %d", got, want)
	}
	p := rep.Zones["XX"][backtest.Persistence]
	want := [4]float64{(20 + 56.25) / 2, (25 + 25) / 2.0, (0 + 150) / 2.0, (100 + 25) / 2.0}
	for d := range want {
		if !near(p.MAPE[d], want[d]) {
			t.Fatalf("persistence MAPE day %d=%v, want %v", d+1, p.MAPE[d], want[d])
		}
	}
	if !near(p.MedianD1, 38.125) || !near(p.P90D1, 20+0.9*36.25) {
		t.Fatalf("median=%v p90=%v, want 38.125 and %v", p.MedianD1, p.P90D1, 20+0.9*36.25)
	}
	// Seasonal naive on day0 repeats the last day (100): same as persistence.
	if sn := rep.Zones["XX"][backtest.SeasonalNaive]; !near(sn.MAPE[0], want[0]) {
		t.Fatalf("seasonal naive day 1=%v, want %v", sn.MAPE[0], want[0])
	}

	var buf bytes.Buffer
	if err := backtest.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Signal string                                   `json:"signal"`
		From   string                                   `json:"from"`
		To     string                                   `json:"to"`
		Zones  map[string]map[string]map[string]float64 `json:"zones"`
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Signal != "direct" || doc.From != "2021-01-01" || doc.To != "2021-01-03" {
		t.Fatalf("header=%+v", doc)
	}
	keys := doc.Zones["XX"]["persistence"]
	for _, k := range []string{"mape_d1", "mape_d2", "mape_d3", "mape_d4", "median_d1", "p90_d1"} {
		if _, ok := keys[k]; !ok {
			t.Fatalf("JSON lacks %s: %v", k, keys)
		}
	}
	if len(keys) != 6 {
		t.Fatalf("JSON metrics have %d keys, want 6: %v", len(keys), keys)
	}

	buf.Reset()
	if err := backtest.WriteTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"XX    persistence       38.12", "mean  persistence", "1 skipped"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestRunInvalid(t *testing.T) {
	t.Parallel()
	_, err := backtest.Run(context.Background(), backtest.Config{From: day0, To: day0.AddDate(0, 0, -1)}, nil)
	if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
		t.Fatalf("code=%q (%v), want %q", got, err, want)
	}
}

// nanModel forecasts NaN for the second hour.
type nanModel struct{}

func (nanModel) Meta() models.Meta {
	return models.Meta{Name: "nan", Family: "test", Zone: "XX", Signal: forecast.SignalDirect, Lookback: 24, Horizon: 96}
}

func (nanModel) Predict(_ []float64, _ time.Time, out []float64) error {
	for i := range out {
		out[i] = 100
	}
	out[1] = math.NaN()
	return nil
}

// TestRunFailsOnNonFinite: a model that issues a non-finite forecast fails
// the run; it used to be scored on its finite hours only.
func TestRunFailsOnNonFinite(t *testing.T) {
	t.Parallel()
	_, err := backtest.Run(context.Background(), backtest.Config{Signal: forecast.SignalDirect, From: day0, To: day0},
		[]backtest.Zone{{Zone: "XX", Series: stepSeries(125, 80, 100, 50), Candidates: []backtest.Candidate{{Name: "nan", Model: nanModel{}}}}})
	if forecast.ErrorCode(err) != forecast.EINTERNAL || !strings.Contains(forecast.ErrorMessage(err), "non-finite") {
		t.Fatalf("err=%v, want EINTERNAL naming the non-finite forecast", err)
	}
}
