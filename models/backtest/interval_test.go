package backtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/backtest"
	"github.com/carbongate/carbongate/models/baseline"
)

// banded is persistence with the interval [0.9, 1.1] × the forecast.
type banded struct{ *baseline.Persistence }

func (b banded) PredictInterval(history []float64, start time.Time, out, lower, upper []float64) error {
	if err := b.Predict(history, start, out); err != nil {
		return err
	}
	for h, v := range out {
		lower[h], upper[h] = 0.9*v, 1.1*v
	}
	return nil
}

var _ models.IntervalModel = banded{}

func TestRunIntervalByHand(t *testing.T) {
	t.Parallel()
	// Issued on day0 the band is [90, 110]: of the lead days 125, 80, 100,
	// 50 only the third (24 hours) is inside. Issued the next day it is
	// [112.5, 137.5] against 80, 100, 50, 100: nothing inside. Coverage
	// 24 of 192 hours, mean width (20 + 25) / 2.
	s := stepSeries(125, 80, 100, 50, 100)
	p, err := baseline.NewPersistence("XX", forecast.SignalDirect, 168, 96)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := backtest.Baselines("XX", forecast.SignalDirect, 168, 96)
	if err != nil {
		t.Fatal(err)
	}
	cands = append(cands, backtest.Candidate{Name: "banded", Model: banded{p}})
	rep, err := backtest.Run(context.Background(), backtest.Config{Signal: forecast.SignalDirect, From: day0, To: day0.AddDate(0, 0, 1)},
		[]backtest.Zone{{Zone: "XX", Series: s, Candidates: cands}})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Zones["XX"]["banded"]
	if !m.Interval || !near(m.Coverage, 12.5) || !near(m.Width, 22.5) {
		t.Fatalf("interval metrics %+v, want coverage 12.5 and width 22.5", m)
	}
	if rep.Zones["XX"][backtest.Persistence].Interval {
		t.Fatal("persistence reported with an interval")
	}
	if !rep.HasIntervals() {
		t.Fatal("HasIntervals() = false")
	}
	for _, s := range rep.Summaries() {
		if s.Model == "banded" && (!s.Interval || !near(s.Coverage, 12.5)) {
			t.Fatalf("summary %+v", s)
		}
		if s.Model == backtest.Persistence && s.Interval {
			t.Fatalf("persistence summary has an interval: %+v", s)
		}
	}

	var buf bytes.Buffer
	if err := backtest.WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Zones map[string]map[string]map[string]*float64 `json:"zones"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	b := doc.Zones["XX"]["banded"]
	if b["coverage"] == nil || !near(*b["coverage"], 12.5) || b["width"] == nil || !near(*b["width"], 22.5) {
		t.Fatalf("JSON of the interval model: %v", b)
	}
	if _, ok := doc.Zones["XX"][backtest.Persistence]["coverage"]; ok {
		t.Fatal("JSON gives persistence a coverage")
	}

	buf.Reset()
	if err := backtest.WriteTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"coverage  width", "12.5   22.5"} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, buf.String())
		}
	}
}
