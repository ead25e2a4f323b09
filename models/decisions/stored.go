package decisions

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/evaluate"
)

// StoredConfig says how to replay stored forecasts (RunStored).
type StoredConfig struct {
	Shapes []Shape
	Every  time.Duration // 0: DefaultEvery
	// Redecide is Config.Redecide: re-decisions use the forecast stored
	// at each re-decision time.
	Redecide time.Duration
	// RedecideGain is Config.RedecideGain.
	RedecideGain float64
	// Signal is the signal replayed; "" when the set holds one only.
	Signal forecast.Signal
}

// RunStored replays the forecasts of set (evaluate.Load, with lead days
// covering the longest slack): each model name and version is a source
// (named by Label, in label order), beside seasonal naive, charged the
// observations of obs. Issue times run every cfg.Every from the set's first
// issue to its last; the zones are the set's. EINVALID (field "signal")
// when the set holds several signals and cfg.Signal is empty; ENOTFOUND
// when it holds no forecast of the signal.
func RunStored(ctx context.Context, cfg StoredConfig, set *evaluate.Set, obs evaluate.Observations) (*Report, error) {
	sig, err := storedSignal(set, cfg.Signal)
	if err != nil {
		return nil, err
	}
	var zones []forecast.Zone
	var from, to time.Time
	for k, is := range set.Issues {
		if k.Signal != sig || len(is) == 0 {
			continue
		}
		if !slices.Contains(zones, k.Zone) {
			zones = append(zones, k.Zone)
		}
		if from.IsZero() || is[0].At.Before(from) {
			from = is[0].At
		}
		if last := is[len(is)-1].At; last.After(to) {
			to = last
		}
	}
	if len(zones) == 0 {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "no stored forecast of the %s signal to replay", sig)
	}
	var slack time.Duration
	for _, s := range cfg.Shapes {
		slack = max(slack, s.Slack)
		for _, z := range s.Zones {
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	observed := map[forecast.Zone]forecast.Series{}
	for _, z := range zones {
		s, err := obs.Observed(ctx, z, sig, from.Add(-baselineLookback), to.Add(slack))
		if err != nil {
			return nil, err
		}
		observed[z] = s
	}
	naive, err := NaiveForecasts(observed, sig, int(slack/time.Hour))
	if err != nil {
		return nil, err
	}
	stored := Stored(set, sig)
	var sources []Source
	for _, name := range slices.Sorted(maps.Keys(stored)) {
		sources = append(sources, Source{Name: name, Forecasts: stored[name]})
	}
	sources = append(sources, Source{Name: SeasonalNaive, Forecasts: naive})
	return Run(ctx, Config{Shapes: cfg.Shapes, Zones: zones, From: forecast.HourFloor(from), To: to, Every: cfg.Every, Redecide: cfg.Redecide, RedecideGain: cfg.RedecideGain}, observed, sources)
}

// baselineLookback is the history the seasonal-naive source reads.
const baselineLookback = 24 * time.Hour

func storedSignal(set *evaluate.Set, sig forecast.Signal) (forecast.Signal, error) {
	if sig != "" {
		return sig, nil
	}
	signals := set.Signals()
	if len(signals) > 1 {
		return "", forecast.FieldErrorf(forecast.EINVALID, "signal", "the forecasts hold several signals (%v): choose one", signals)
	}
	if len(signals) == 0 {
		return "", forecast.Errorf(forecast.ENOTFOUND, "no stored forecast to replay")
	}
	return signals[0], nil
}

// StoredForecasts serves the issues of one model version read from a
// forecast store (evaluate.Load), per zone.
type StoredForecasts map[forecast.Zone]map[int64]evaluate.Issue

// Stored groups the issues of set of signal sig by source: one
// StoredForecasts per model name and version, named by Label.
func Stored(set *evaluate.Set, sig forecast.Signal) map[string]StoredForecasts {
	out := map[string]StoredForecasts{}
	for _, k := range set.Keys() {
		if k.Signal != sig {
			continue
		}
		name := Label(k)
		if out[name] == nil {
			out[name] = StoredForecasts{}
		}
		byTime := map[int64]evaluate.Issue{}
		for _, is := range set.Issues[k] {
			byTime[is.At.Unix()] = is
		}
		out[name][k.Zone] = byTime
	}
	return out
}

// Label names the source of a stored key: a zone's own model
// (carbon-forecaster-<ZONE>) is "carbon-forecaster-<zone>@VERSION" written
// with the zone left out, "carbon-forecaster-*@VERSION", so that zones
// pool into one source; any other model is "NAME@VERSION".
func Label(k evaluate.Key) string {
	name := k.ModelName
	if name == models.ZoneModelName(k.Zone) {
		name = models.NamePrefix + "*"
	}
	return name + "@" + k.ModelVersion
}

// Issue implements Forecasts: false when no issue of zone is stored at at
// or one of its first hours hours is missing.
func (s StoredForecasts) Issue(_ context.Context, zone forecast.Zone, at time.Time, hours int) (forecast.Series, bool, error) {
	is, ok := s[zone][at.Unix()]
	if !ok || len(is.Value) < hours || !allFinite(is.Value[:hours]) {
		return forecast.Series{}, false, nil
	}
	return forecast.Series{Start: at, Values: is.Value[:hours]}, true, nil
}
