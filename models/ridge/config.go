// Package ridge is carbongate's linear forecaster: a ridge regression of the
// next Horizon hours on lagged values and calendar features, fitted directly
// for every lead hour at once (one weight vector per lead hour, solved as one
// multi-right-hand-side system).
//
// Each sample is scaled by the mean and standard deviation of the end of its
// own history window, so the model predicts the shape of the coming hours
// relative to the recent level. That keeps it robust to level drift between
// years and lets one model serve many zones: fitted on one zone it is the
// "ridge" family, fitted on the pooled series of several zones it is the
// "generic-ridge" family, usable for a zone it has never seen.
//
// Calendar features are those of the issue hour (start). Since each lead
// hour h has its own weights, a one-hot of the issue hour of the week is,
// for lead h, exactly a one-hot of the target hour of the week (start + h).
package ridge

import (
	"fmt"
	"slices"

	"github.com/carbongate/carbongate/forecast"
)

// Family names.
const (
	FamilyZone    = "ridge"         // fitted on one zone
	FamilyGeneric = "generic-ridge" // fitted on several zones' normalised series
)

// Calendar selects the calendar features.
type Calendar string

// Calendar encodings of the issue hour (UTC).
const (
	CalendarNone        Calendar = "none"
	CalendarHourWeekday Calendar = "hour+weekday" // one-hot hour of day (24) and weekday (7)
	CalendarHourOfWeek  Calendar = "hour-of-week" // one-hot hour of the week (168)
)

// Scaling selects how a sample is scaled by its history window.
type Scaling string

// Scalings. ScaleLevel and ScaleStd centre on the window mean; ScaleLevel
// divides by |mean| (the squared loss then approximates a relative error,
// like MAPE), ScaleStd by the window's standard deviation. ScaleLog works on
// log values centred on the window's mean log (values are floored at 1e-3
// first), so the loss is a log ratio and forecasts stay positive.
const (
	ScaleLevel Scaling = "level"
	ScaleStd   Scaling = "std"
	ScaleLog   Scaling = "log"
)

// Config is the shape of a ridge model. The zero value is not valid; start
// from DefaultConfig.
type Config struct {
	Lookback   int      `yaml:"lookback" json:"lookback"`       // L: hours of history
	Horizon    int      `yaml:"horizon" json:"horizon"`         // H: hours forecast
	Lags       []int    `yaml:"lags" json:"lags"`               // 1 = the hour before start; each ≤ Lookback
	NormWindow int      `yaml:"norm_window" json:"norm_window"` // hours at the end of history giving mean and scale
	Scaling    Scaling  `yaml:"scaling" json:"scaling"`
	Calendar   Calendar `yaml:"calendar" json:"calendar"`
	Lambda     float64  `yaml:"lambda" json:"lambda"` // ridge penalty per training sample
	// Origins is 1 for one set of weights whatever the issue hour, or 24
	// for a separate set per issue hour of the day (UTC).
	Origins int `yaml:"origins" json:"origins"`
	// Stride is the step in hours between training issue times (1 = every
	// hour). It affects fitting only.
	Stride int `yaml:"stride" json:"stride"`
}

// DefaultConfig returns the configuration chosen by blocked cross-validation
// on 2020 (six two-month folds, see models/README.md): L = 168, H = 96,
// lags 1–24 and the same hour 2–7 days back, hour-of-day and weekday
// one-hots, log values centred on the week's mean log, λ = 1e-3, one weight
// set per issue hour.
func DefaultConfig() Config {
	lags := make([]int, 0, 30)
	for l := 1; l <= 24; l++ {
		lags = append(lags, l)
	}
	for l := 48; l <= 168; l += 24 {
		lags = append(lags, l)
	}
	return Config{
		Lookback:   168,
		Horizon:    96,
		Lags:       lags,
		NormWindow: 168,
		Scaling:    ScaleLog,
		Calendar:   CalendarHourWeekday,
		Lambda:     1e-3,
		Stride:     1,
		Origins:    24,
	}
}

// Validate checks c and returns EINVALID naming the first problem.
func (c Config) Validate() error {
	switch {
	case c.Lookback < 1:
		return forecast.Errorf(forecast.EINVALID, "ridge lookback %d must be ≥ 1", c.Lookback)
	case c.Horizon < 1:
		return forecast.Errorf(forecast.EINVALID, "ridge horizon %d must be ≥ 1", c.Horizon)
	case len(c.Lags) == 0:
		return forecast.Errorf(forecast.EINVALID, "ridge needs at least one lag")
	case c.NormWindow < 1 || c.NormWindow > c.Lookback:
		return forecast.Errorf(forecast.EINVALID, "ridge norm window %d must be in 1..%d", c.NormWindow, c.Lookback)
	case !(c.Lambda >= 0):
		return forecast.Errorf(forecast.EINVALID, "ridge lambda %v must be ≥ 0", c.Lambda)
	case c.Origins != 1 && c.Origins != 24:
		return forecast.Errorf(forecast.EINVALID, "ridge origins %d must be 1 or 24", c.Origins)
	case c.Stride < 1:
		return forecast.Errorf(forecast.EINVALID, "ridge stride %d must be ≥ 1", c.Stride)
	}
	if c.Scaling != ScaleLevel && c.Scaling != ScaleStd && c.Scaling != ScaleLog {
		return forecast.Errorf(forecast.EINVALID, "ridge scaling %q is not one of level, std, log", string(c.Scaling))
	}
	for _, l := range c.Lags {
		if l < 1 || l > c.Lookback {
			return forecast.Errorf(forecast.EINVALID, "ridge lag %d must be in 1..%d", l, c.Lookback)
		}
	}
	if _, err := calendarWidth(c.Calendar); err != nil {
		return err
	}
	return nil
}

func calendarWidth(c Calendar) (int, error) {
	switch c {
	case CalendarNone:
		return 0, nil
	case CalendarHourWeekday:
		return 24 + 7, nil
	case CalendarHourOfWeek:
		return 168, nil
	}
	return 0, forecast.Errorf(forecast.EINVALID, "ridge calendar %q is not one of none, hour+weekday, hour-of-week", string(c))
}

// NumWeights returns the number of weights of a model: Origins ×
// NumFeatures × Horizon. c must be valid.
func (c Config) NumWeights() int { return c.Origins * c.NumFeatures() * c.Horizon }

// NumFeatures returns the number of weights per lead hour: an intercept, one
// per lag, and the calendar one-hots. c must be valid.
func (c Config) NumFeatures() int {
	w, _ := calendarWidth(c.Calendar)
	return 1 + len(c.Lags) + w
}

// Clone returns a copy of c that shares no memory with it.
func (c Config) Clone() Config {
	c.Lags = slices.Clone(c.Lags)
	return c
}

func (c Config) String() string {
	return fmt.Sprintf("L=%d H=%d lags=%d norm=%d/%s cal=%s λ=%g origins=%d stride=%d", c.Lookback, c.Horizon, len(c.Lags), c.NormWindow, c.Scaling, c.Calendar, c.Lambda, c.Origins, c.Stride)
}
