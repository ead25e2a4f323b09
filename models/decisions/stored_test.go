package decisions_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/decisions"
	"github.com/carbongate/carbongate/models/evaluate"
)

// Stored forecasts: version 1 of DE's model is the truth, version 2 the
// truth backwards; the generic model has an hour missing at one issue. Each
// version is a source of its own, DE's labelled with the zone left out.
func TestRunStored(t *testing.T) {
	const span = 48
	obsAt := func(t time.Time) float64 { return 100 + float64((t.Hour()*7)%24) } // no two hours of a day alike
	issue := func(at time.Time, f func(float64) float64) evaluate.Issue {
		is := evaluate.Issue{At: at, Value: make([]float64, span), Lower: make([]float64, span), Upper: make([]float64, span)}
		for h := range span {
			is.Value[h] = f(obsAt(at.Add(time.Duration(h) * time.Hour)))
			is.Lower[h], is.Upper[h] = math.NaN(), math.NaN()
		}
		return is
	}
	var v1, v2, gen []evaluate.Issue
	for i := range 4 {
		at := t0.Add(time.Duration(24+6*i) * time.Hour)
		v1 = append(v1, issue(at, func(x float64) float64 { return x }))
		v2 = append(v2, issue(at, func(x float64) float64 { return -x }))
		g := issue(at, func(x float64) float64 { return x })
		if i == 2 {
			g.Value[5] = math.NaN()
		}
		gen = append(gen, g)
	}
	de := models.ZoneModelName("DE")
	set := &evaluate.Set{LeadDays: 2, Issues: map[evaluate.Key][]evaluate.Issue{
		{Zone: "DE", Signal: forecast.SignalLifecycle, ModelName: de, ModelVersion: "1"}:                 v1,
		{Zone: "DE", Signal: forecast.SignalLifecycle, ModelName: de, ModelVersion: "2"}:                 v2,
		{Zone: "DE", Signal: forecast.SignalLifecycle, ModelName: models.GenericName, ModelVersion: "7"}: gen,
	}}
	obs := evaluate.SeriesFunc(func(z forecast.Zone, s forecast.Signal) (forecast.Series, bool) {
		v := make([]float64, 5*24)
		for i := range v {
			v[i] = obsAt(t0.Add(time.Duration(i) * time.Hour))
		}
		return forecast.Series{Start: t0, Values: v}, z == "DE" && s == forecast.SignalLifecycle
	})
	rep, err := decisions.RunStored(context.Background(), decisions.StoredConfig{Shapes: []decisions.Shape{shape(t, "2h/24h")}}, set, obs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"carbon-forecaster-*@1", "carbon-forecaster-*@2", models.GenericName + "@7", decisions.SeasonalNaive}
	if len(rep.Sources) != len(want) {
		t.Fatalf("sources %v, want %v", rep.Sources, want)
	}
	for i, w := range want {
		if rep.Sources[i] != w {
			t.Fatalf("sources %v, want %v", rep.Sources, want)
		}
	}
	r := rep.Rows[0]
	if r.Issues != 3 || r.Skipped != 1 || !(r.Oracle.Saving > 0) {
		t.Fatalf("row %+v, want 3 issues (one without the generic forecast) and an oracle saving", r)
	}
	capture := map[string]float64{}
	for _, o := range r.Sources {
		capture[o.Source] = o.Capture
	}
	// The observations repeat daily: seasonal naive is the truth too.
	if capture[want[0]] != 1 || capture[want[2]] != 1 || capture[decisions.SeasonalNaive] != 1 || !(capture[want[1]] < 0) {
		t.Fatalf("captures %v, want 1 for the truth and naive, < 0 backwards", capture)
	}
	set.Issues[evaluate.Key{Zone: "DE", Signal: forecast.SignalDirect, ModelName: de, ModelVersion: "1"}] = v1
	if _, err := decisions.RunStored(context.Background(), decisions.StoredConfig{Shapes: decisions.DefaultShapes()}, set, obs); forecast.ErrorField(err) != "signal" {
		t.Fatalf("two signals: %v, want EINVALID on signal", err)
	}
}
