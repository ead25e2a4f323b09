package evaluate

import (
	"cmp"
	"context"
	"math"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// Gate says which two versions of a registered model to compare.
type Gate struct {
	Model      string          // model_name of the forecast rows
	Champion   string          // model_version of the champion
	Challenger string          // model_version of the challenger
	Signal     forecast.Signal // "" when the rows hold one signal only
	Zones      []forecast.Zone // nil: every zone both versions forecast
	Metric     string          // an error metric (MetricNames), e.g. mape_d1
	LeadDays   int             // 0: DefaultLeadDays
	// MinImprovement is the fraction by which the challenger must be
	// lower: promote when challenger < champion × (1 − MinImprovement).
	MinImprovement float64
}

// Verdict is the outcome of Compare.
type Verdict struct {
	Metric     string
	Signal     forecast.Signal
	Zones      []forecast.Zone // zones compared, sorted
	From, To   time.Time       // first and last issue time of the common window
	Issues     int             // issued forecasts scored per version, summed over zones
	Champion   float64         // the champion's metric: mean over Zones
	Challenger float64         // the challenger's metric: mean over Zones
	Promote    bool            // the challenger is better by at least MinImprovement
}

// Window returns the common window as "FROM/TO": dates when both ends are
// at midnight UTC, RFC 3339 times otherwise.
func (v Verdict) Window() string {
	layout := time.DateOnly
	if !v.From.Equal(v.From.Truncate(24*time.Hour)) || !v.To.Equal(v.To.Truncate(24*time.Hour)) {
		layout = time.RFC3339
	}
	return v.From.UTC().Format(layout) + "/" + v.To.UTC().Format(layout)
}

// Compare scores g's champion and challenger on the SAME window: per zone,
// the issue times both versions have forecasts for, covering the same
// complete lead days. The metric of a version is the mean over zones of
// its per-zone metric. EINVALID for a bad gate (field "metric",
// "min_improvement", "signal" when the rows hold several signals and
// g.Signal is empty); ENOTFOUND (field "challenger") when the versions
// share no issue time; EUNAVAILABLE when no common issue can be scored for
// lack of observations.
func Compare(ctx context.Context, fs store.Forecasts, obs Observations, g Gate) (*Verdict, error) {
	days := cmp.Or(g.LeadDays, DefaultLeadDays)
	if err := checkGate(g, days); err != nil {
		return nil, err
	}
	set, err := Load(ctx, fs, Selection{
		Query:    store.ForecastQuery{Zones: g.Zones, Signal: g.Signal, ModelName: g.Model},
		Versions: []string{g.Champion, g.Challenger}, LeadDays: days,
	})
	if err != nil {
		return nil, err
	}
	common, sig, err := commonIssues(set, g)
	if err != nil {
		return nil, err
	}
	rep, err := Score(ctx, common, obs)
	if err != nil {
		return nil, err
	}
	v := &Verdict{Metric: g.Metric, Signal: sig}
	var champ, chall []float64
	for _, r := range rep.Results {
		m, _ := r.Metric(g.Metric) // checked by checkGate
		if r.ModelVersion == g.Challenger {
			chall = append(chall, m)
			v.Issues += r.Scored
			v.Zones = append(v.Zones, r.Zone)
		} else {
			champ = append(champ, m)
		}
	}
	for _, is := range common.Issues {
		if len(is) > 0 && (v.From.IsZero() || is[0].At.Before(v.From)) {
			v.From = is[0].At
		}
		if len(is) > 0 && is[len(is)-1].At.After(v.To) {
			v.To = is[len(is)-1].At
		}
	}
	v.Champion, v.Challenger = forecast.Mean(champ), forecast.Mean(chall)
	if v.Issues == 0 || math.IsNaN(v.Champion) || math.IsNaN(v.Challenger) {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "no common forecast of %s versions %s and %s from %s could be scored: observations are missing", g.Model, g.Champion, g.Challenger, v.Window())
	}
	v.Promote = v.Challenger < v.Champion*(1-g.MinImprovement)
	return v, nil
}

func checkGate(g Gate, days int) error {
	if err := ParseMetric(g.Metric, days); err != nil {
		return err
	}
	if strings.HasPrefix(g.Metric, MeasureCoverage) || strings.HasPrefix(g.Metric, MeasureWidth) {
		return forecast.FieldErrorf(forecast.EINVALID, "metric", "metric %s is not an error (a narrower interval is not a better model): use mape_dN or mae_dN", g.Metric)
	}
	if !(g.MinImprovement >= 0 && g.MinImprovement < 1) {
		return forecast.FieldErrorf(forecast.EINVALID, "min_improvement", "minimum improvement %v is not a fraction in [0, 1)", g.MinImprovement)
	}
	if g.Model == "" || g.Champion == "" || g.Challenger == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "model", "the gate needs a model name and both versions")
	}
	if g.Champion == g.Challenger {
		return forecast.FieldErrorf(forecast.EINVALID, "challenger", "version %s is already the champion", g.Challenger)
	}
	return nil
}

// commonIssues keeps, per zone, the issues both versions have at the same
// time covering the same complete lead days.
func commonIssues(set *Set, g Gate) (*Set, forecast.Signal, error) {
	signals := set.Signals()
	if len(signals) > 1 {
		return nil, "", forecast.FieldErrorf(forecast.EINVALID, "signal", "the forecasts of %s hold several signals (%v): choose one", g.Model, signals)
	}
	out := &Set{LeadDays: set.LeadDays, Issues: map[Key][]Issue{}}
	for k, champ := range set.Issues {
		if k.ModelVersion != g.Champion {
			continue
		}
		ck := k
		ck.ModelVersion = g.Challenger
		chall := map[int64]Issue{}
		for _, is := range set.Issues[ck] {
			chall[is.At.Unix()] = is
		}
		for _, a := range champ {
			b, ok := chall[a.At.Unix()]
			if !ok || !sameCoverage(a, b, set.LeadDays) {
				continue
			}
			out.Issues[k] = append(out.Issues[k], a)
			out.Issues[ck] = append(out.Issues[ck], b)
		}
	}
	if len(out.Issues) == 0 {
		return nil, "", forecast.FieldErrorf(forecast.ENOTFOUND, "challenger", "no issue time has forecasts of both %s version %s (challenger) and version %s (champion) in the store", g.Model, g.Challenger, g.Champion)
	}
	return out, signals[0], nil
}

// sameCoverage reports whether a and b cover the same complete lead days.
func sameCoverage(a, b Issue, days int) bool {
	for d := range days {
		lo, hi := d*forecast.HoursPerDay, (d+1)*forecast.HoursPerDay
		if allFinite(a.Value[lo:hi]) != allFinite(b.Value[lo:hi]) {
			return false
		}
	}
	return true
}
