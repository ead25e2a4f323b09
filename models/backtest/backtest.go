// Package backtest evaluates frozen models the way the scheduler uses them:
// forecasts issued daily at 00:00 UTC, Horizon hours ahead, each from the
// history before its issue time only, scored by MAPE per lead day.
package backtest

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/baseline"
)

// Names of the baseline rows of a report.
const (
	Persistence   = "persistence"
	SeasonalNaive = "seasonal-naive"
)

// LeadDays is the number of lead days scored (lead day 1 is hours 0–23).
const LeadDays = 4

// Candidate is one model under test, reported under Name.
type Candidate struct {
	Name  string
	Model models.Model
}

// Zone is one zone's observed series and the models to test on it.
type Zone struct {
	Zone       forecast.Zone
	Series     forecast.Series
	Candidates []Candidate
}

// Config says which issue times to score.
type Config struct {
	Signal forecast.Signal
	From   time.Time // first issue day (its 00:00 UTC)
	To     time.Time // last issue day, inclusive
}

// Metrics are one model's scores on one zone, in percent.
type Metrics struct {
	MAPE     [LeadDays]float64 // mean over issue days of the daily MAPE of each lead day
	MedianD1 float64           // median of the daily lead-day-1 MAPEs
	P90D1    float64           // 90th percentile of the daily lead-day-1 MAPEs
	Days     int               // issue days scored
	// Interval is set when the model gave prediction intervals
	// (models.IntervalModel); Coverage is then the share of the scored
	// hours (all lead days) whose actual lies within [lower, upper], in
	// percent, and Width the mean of upper − lower over those hours, in
	// the signal's unit (gCO2eq/kWh).
	Interval bool
	Coverage float64
	Width    float64
}

// MarshalJSON writes the fields other tools read (mape_d1..mape_d4,
// median_d1, p90_d1, and coverage and width for interval models); a
// metric without data is null.
func (m Metrics) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	type point struct {
		D1     *float64 `json:"mape_d1"`
		D2     *float64 `json:"mape_d2"`
		D3     *float64 `json:"mape_d3"`
		D4     *float64 `json:"mape_d4"`
		Median *float64 `json:"median_d1"`
		P90    *float64 `json:"p90_d1"`
	}
	p := point{num(m.MAPE[0]), num(m.MAPE[1]), num(m.MAPE[2]), num(m.MAPE[3]), num(m.MedianD1), num(m.P90D1)}
	if !m.Interval {
		return json.Marshal(p)
	}
	return json.Marshal(struct {
		point
		Coverage *float64 `json:"coverage"`
		Width    *float64 `json:"width"`
	}{p, num(m.Coverage), num(m.Width)})
}

// Report is the result of a backtest. Its JSON form is
// {"signal", "from", "to", "zones": {zone: {model: metrics}}}.
type Report struct {
	Signal forecast.Signal                      `json:"signal"`
	From   string                               `json:"from"`
	To     string                               `json:"to"`
	Zones  map[forecast.Zone]map[string]Metrics `json:"zones"`
	Issued map[forecast.Zone]int                `json:"-"` // issue days scored per zone
	Skip   map[forecast.Zone]int                `json:"-"` // issue days skipped per zone
	Order  map[forecast.Zone][]string           `json:"-"` // model names in candidate order
}

// Baselines returns the baseline candidates for a zone: persistence and
// daily seasonal naive, reading lookback hours.
func Baselines(zone forecast.Zone, signal forecast.Signal, lookback, horizon int) ([]Candidate, error) {
	p, err := baseline.NewPersistence(zone, signal, lookback, horizon)
	if err != nil {
		return nil, err
	}
	s, err := baseline.NewSeasonalNaive(zone, signal, baseline.Daily, lookback, horizon)
	if err != nil {
		return nil, err
	}
	return []Candidate{{SeasonalNaive, s}, {Persistence, p}}, nil
}

// Run scores every candidate of every zone on the issue days from cfg.From
// to cfg.To (inclusive, 00:00 UTC). An issue day is skipped, for all
// candidates of its zone, when its 96 hours of actuals (LeadDays×24) are not
// all finite and observed, or when a candidate's history before it is not.
// Candidates need a horizon of at least LeadDays×24 hours. EINVALID for a
// bad configuration; prediction errors are returned as they come, and a
// non-finite forecast is EINTERNAL.
func Run(ctx context.Context, cfg Config, zones []Zone) (*Report, error) {
	from, to := cfg.From.UTC().Truncate(24*time.Hour), cfg.To.UTC().Truncate(24*time.Hour)
	if to.Before(from) {
		return nil, forecast.Errorf(forecast.EINVALID, "evaluation ends (%s) before it starts (%s)", to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	const span = LeadDays * forecast.HoursPerDay
	rep := &Report{
		Signal: cfg.Signal, From: from.Format(time.DateOnly), To: to.Format(time.DateOnly),
		Zones:  map[forecast.Zone]map[string]Metrics{},
		Issued: map[forecast.Zone]int{}, Skip: map[forecast.Zone]int{}, Order: map[forecast.Zone][]string{},
	}
	for _, z := range zones {
		names := make([]string, len(z.Candidates))
		outs := make([][]float64, len(z.Candidates))
		daily := make([][LeadDays][]float64, len(z.Candidates))
		ivs := make([]*intervalScore, len(z.Candidates))
		for i, c := range z.Candidates {
			meta := c.Model.Meta()
			if meta.Horizon < span {
				return nil, forecast.Errorf(forecast.EINVALID, "model %s of %s forecasts %d hours, evaluation needs %d", c.Name, z.Zone, meta.Horizon, span)
			}
			if slices.Contains(names[:i], c.Name) {
				return nil, forecast.Errorf(forecast.EINVALID, "model name %s appears twice for %s", c.Name, z.Zone)
			}
			names[i] = c.Name
			outs[i] = make([]float64, meta.Horizon)
			if _, ok := c.Model.(models.IntervalModel); ok {
				ivs[i] = &intervalScore{lower: make([]float64, meta.Horizon), upper: make([]float64, meta.Horizon)}
			}
		}
		rep.Order[z.Zone] = names
		for day := from; !day.After(to); day = day.AddDate(0, 0, 1) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			actual := z.Series.Window(day, day.Add(span*forecast.Hour)).Values
			ok := len(actual) == span && allFinite(actual)
			for _, c := range z.Candidates {
				if !ok {
					break
				}
				h, has := z.Series.Last(day, c.Model.Meta().Lookback)
				ok = has && allFinite(h)
			}
			if !ok {
				rep.Skip[z.Zone]++
				continue
			}
			rep.Issued[z.Zone]++
			for i, c := range z.Candidates {
				h, _ := z.Series.Last(day, c.Model.Meta().Lookback)
				if err := predict(c.Model, h, day, outs[i], ivs[i]); err != nil {
					return nil, err
				}
				// A non-finite forecast fails the run: scoring only the
				// finite hours would flatter the model.
				if !allFinite(outs[i][:span]) || ivs[i] != nil && (!allFinite(ivs[i].lower[:span]) || !allFinite(ivs[i].upper[:span])) {
					return nil, forecast.Errorf(forecast.EINTERNAL, "model %s of %s issued a non-finite forecast on %s", c.Name, z.Zone, day.Format(time.DateOnly))
				}
				ivs[i].add(actual)
				for d, v := range forecast.ByLeadDay(actual, outs[i][:span], forecast.MAPE) {
					daily[i][d] = append(daily[i][d], v)
				}
			}
		}
		ms := make(map[string]Metrics, len(names))
		for i, name := range names {
			var m Metrics
			for d := range LeadDays {
				m.MAPE[d] = forecast.Mean(daily[i][d])
			}
			m.MedianD1 = forecast.Quantile(daily[i][0], 0.5)
			m.P90D1 = forecast.Quantile(daily[i][0], 0.9)
			m.Days = len(daily[i][0])
			if iv := ivs[i]; iv != nil {
				m.Interval = true
				m.Coverage = 100 * float64(iv.in) / float64(iv.n)
				m.Width = iv.width / float64(iv.n)
			}
			ms[name] = m
		}
		rep.Zones[z.Zone] = ms
	}
	return rep, nil
}

// intervalScore accumulates the interval hits and widths of one model.
type intervalScore struct {
	lower, upper []float64
	in, n        int
	width        float64
}

// predict runs m on one issue time, with its interval when iv is set.
func predict(m models.Model, history []float64, start time.Time, out []float64, iv *intervalScore) error {
	if iv == nil {
		return m.Predict(history, start, out)
	}
	return m.(models.IntervalModel).PredictInterval(history, start, out, iv.lower, iv.upper)
}

// add scores the last interval against actual (the first len(actual)
// hours); a nil iv does nothing.
func (iv *intervalScore) add(actual []float64) {
	if iv == nil {
		return
	}
	for h, a := range actual {
		lo, hi := iv.lower[h], iv.upper[h]
		if a >= lo && a <= hi {
			iv.in++
		}
		iv.width += hi - lo
		iv.n++
	}
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
