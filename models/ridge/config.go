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
//
// With Config.Folds, Fit chooses λ per lead day by blocked cross-validation
// within the training data and calibrates a prediction interval on the
// out-of-fold residuals (package conformal); such a model serves as a
// Bounded, a models.IntervalModel (see Model.Serving).
package ridge

import (
	"fmt"
	"math"
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

	// The fields below are absent from format-1 artifacts; their zero
	// values mean "off", which is how those models were fitted.

	// Profile, when > 0, adds 24 features: the mean daily profile of the
	// last Profile days (feature j is the mean of the hours 24k−j before
	// start, k = 1..Profile, i.e. the hour of day of start+j−24).
	Profile int `yaml:"profile,omitempty" json:"profile,omitempty"`
	// DailyMeans, when > 0, adds the mean of each of the last DailyMeans
	// days (24-hour blocks ending the hour before start) as features.
	DailyMeans int `yaml:"daily_means,omitempty" json:"daily_means,omitempty"`
	// OriginWidth, with 24 origins, also fits the weights of issue hour o
	// on the samples issued at hours o±1..o±OriginWidth (fitting only).
	OriginWidth int `yaml:"origin_width,omitempty" json:"origin_width,omitempty"`
	// Folds, when ≥ 2, is the number of contiguous time blocks of the
	// training data used for blocked cross-validation: λ is then chosen
	// per lead day from LambdaGrid, and the prediction interval (if any)
	// is calibrated on the out-of-fold residuals. Samples whose targets
	// reach into a held-out block are left out of that fold's fit.
	Folds      int       `yaml:"folds,omitempty" json:"folds,omitempty"`
	LambdaGrid []float64 `yaml:"lambda_grid,omitempty" json:"lambda_grid,omitempty"`
	// LeadLambdas is the λ of each lead day (24 lead hours; the last day
	// may be partial) that Fit chose by cross-validation; when set it
	// overrides Lambda. Fit fills it when LambdaGrid is set.
	LeadLambdas []float64 `yaml:"lead_lambdas,omitempty" json:"lead_lambdas,omitempty"`
	// Interval, when > 0, is the nominal coverage (e.g. 0.8) of the
	// prediction interval Fit calibrates from out-of-fold residuals (needs
	// Folds ≥ 2); see package conformal.
	Interval float64 `yaml:"interval,omitempty" json:"interval,omitempty"`
}

// DefaultConfig returns the configuration chosen by blocked cross-validation
// on 2020 (see models/README.md): L = 168, H = 96, lags 1–24 and the same
// hour 2–7 days back, the mean daily profile of the last 7 days (chosen
// for the decisions it leads to: it raises the share of the ideal saving
// captured on a late-2020 holdout and on 2021-H1, see docs/models.md),
// hour-of-day and weekday one-hots, log values centred on the week's mean
// log, one weight set per issue hour, λ per lead day chosen by 5-fold
// blocked cross-validation, and an 80 % interval calibrated on the
// out-of-fold residuals.
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
		Folds:      5,
		LambdaGrid: []float64{1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2},
		Interval:   0.8,
		Profile:    7,
	}
}

// LeadDays returns the number of lead days (blocks of 24 lead hours, the
// last possibly partial) that LeadLambdas covers.
func (c Config) LeadDays() int { return (c.Horizon + 23) / 24 }

// lambda returns the penalty of lead hour h.
func (c *Config) lambda(h int) float64 {
	if len(c.LeadLambdas) > 0 {
		return c.LeadLambdas[h/24]
	}
	return c.Lambda
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
	switch {
	case c.Profile < 0 || 24*c.Profile > c.Lookback:
		return forecast.Errorf(forecast.EINVALID, "ridge profile %d days must be in 0..%d", c.Profile, c.Lookback/24)
	case c.DailyMeans < 0 || 24*c.DailyMeans > c.Lookback:
		return forecast.Errorf(forecast.EINVALID, "ridge daily means %d must be in 0..%d", c.DailyMeans, c.Lookback/24)
	case c.OriginWidth < 0 || c.OriginWidth > 11 || (c.Origins == 1 && c.OriginWidth != 0):
		return forecast.Errorf(forecast.EINVALID, "ridge origin width %d must be in 0..11 (0 with one origin)", c.OriginWidth)
	case c.Folds < 0 || c.Folds == 1:
		return forecast.Errorf(forecast.EINVALID, "ridge folds %d must be 0 or ≥ 2", c.Folds)
	case len(c.LambdaGrid) > 0 && c.Folds == 0:
		return forecast.Errorf(forecast.EINVALID, "ridge lambda grid needs folds ≥ 2")
	case len(c.LeadLambdas) > 0 && len(c.LeadLambdas) != c.LeadDays():
		return forecast.Errorf(forecast.EINVALID, "ridge lead lambdas has %d values, want one per lead day (%d)", len(c.LeadLambdas), c.LeadDays())
	case c.Interval != 0 && !(c.Interval > 0 && c.Interval < 1):
		return forecast.Errorf(forecast.EINVALID, "ridge interval level %v must be in (0, 1), or 0 for none", c.Interval)
	case c.Interval != 0 && c.Folds == 0:
		return forecast.Errorf(forecast.EINVALID, "ridge interval needs folds ≥ 2 to calibrate on out-of-fold residuals")
	}
	for _, l := range slices.Concat(c.LambdaGrid, c.LeadLambdas) {
		if !(l >= 0) || math.IsInf(l, 0) {
			return forecast.Errorf(forecast.EINVALID, "ridge lambda %v must be finite and ≥ 0", l)
		}
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

// NumWeights returns the number of regression weights of a model:
// Origins × NumFeatures × Horizon. c must be valid.
func (c Config) NumWeights() int { return c.Origins * c.NumFeatures() * c.Horizon }

// NumBounds returns the number of interval bounds a model stores after its
// weights: Origins × 2 × Horizon when Interval is set, else 0.
func (c Config) NumBounds() int {
	if c.Interval == 0 {
		return 0
	}
	return c.Origins * 2 * c.Horizon
}

// NumFeatures returns the number of weights per lead hour: an intercept, one
// per lag, the profile and daily-mean blocks, and the calendar one-hots. c
// must be valid.
func (c Config) NumFeatures() int {
	w, _ := calendarWidth(c.Calendar)
	return c.calendarOffset() + w
}

// profileOffset, meansOffset and calendarOffset are the indices of the
// first feature of each block.
func (c *Config) profileOffset() int { return 1 + len(c.Lags) }

func (c *Config) meansOffset() int {
	if c.Profile > 0 {
		return c.profileOffset() + 24
	}
	return c.profileOffset()
}

func (c *Config) calendarOffset() int { return c.meansOffset() + c.DailyMeans }

// Clone returns a copy of c that shares no memory with it.
func (c Config) Clone() Config {
	c.Lags = slices.Clone(c.Lags)
	c.LambdaGrid = slices.Clone(c.LambdaGrid)
	c.LeadLambdas = slices.Clone(c.LeadLambdas)
	return c
}

func (c Config) String() string {
	return fmt.Sprintf("L=%d H=%d lags=%d profile=%d means=%d norm=%d/%s cal=%s λ=%g grid=%v origins=%d±%d folds=%d interval=%g stride=%d",
		c.Lookback, c.Horizon, len(c.Lags), c.Profile, c.DailyMeans, c.NormWindow, c.Scaling, c.Calendar, c.Lambda, c.LambdaGrid,
		c.Origins, c.OriginWidth, c.Folds, c.Interval, c.Stride)
}
