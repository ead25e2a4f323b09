package ridge

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
)

// Input is one zone's observed series, oldest first.
type Input struct {
	Zone   forecast.Zone
	Series forecast.Series
}

// Spec says what to fit.
type Spec struct {
	Name   string          // registered model name, e.g. carbon-forecaster-DE
	Family string          // FamilyZone or FamilyGeneric; "" picks by the number of zones
	Zone   forecast.Zone   // the zone of a zone model; "" for a generic one
	Signal forecast.Signal // the signal the inputs hold
	// Until, when set, is the training cut-off: observations at or after it
	// are never read, whatever the inputs hold.
	Until  time.Time
	Config Config
}

// Fit fits a ridge model on every complete sample of the inputs: each issue
// hour t (every Config.Stride hours) with Lookback finite hours before t and
// Horizon finite hours from t on, all before spec.Until. It minimises
// Σ‖y − xW‖² + λ·n·‖W‖² over the scaled samples, the intercept unpenalised,
// for all lead hours at once, one system per origin.
//
// With Config.Folds ≥ 2 the samples are split by issue time into Folds
// contiguous blocks; with a LambdaGrid, λ of each lead day is the grid
// value with the least held-out squared error summed over blocks and
// origins (recorded in LeadLambdas); with an Interval, the bounds of each
// origin and lead hour are the split-conformal quantiles of the out-of-fold
// log-ratio residuals, each divided by its history's conformal.Difficulty.
// No held-out block ever contributes a target to its own fit. The weights
// returned are those of the fit on all samples.
//
// EINVALID for a bad config or no complete sample (or a fold without
// one); ctx is checked between origins.
func Fit(ctx context.Context, spec Spec, data []Input) (*Model, error) {
	c := spec.Config.Clone()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if spec.Family == "" {
		spec.Family = FamilyZone
		if spec.Zone == "" {
			spec.Family = FamilyGeneric
		}
	}
	if len(c.LambdaGrid) > 0 {
		c.LeadLambdas = nil
	}
	f, err := newFitter(&spec, &c, data)
	if err != nil {
		return nil, err
	}
	stats := make([]*originStats, c.Origins)
	for o := range c.Origins {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if stats[o], err = f.accumulate(o); err != nil {
			return nil, err
		}
	}
	if len(c.LambdaGrid) > 0 {
		if c.LeadLambdas, err = f.chooseLambdas(ctx, stats); err != nil {
			return nil, err
		}
	}
	weights := make([]float64, 0, c.NumWeights()+c.NumBounds())
	for _, st := range stats {
		W, err := st.solve(&c, st.G, st.B, st.n)
		if err != nil {
			return nil, forecast.Errorf(forecast.EINVALID, "ridge normal equations of %s are singular; raise lambda", spec.Name)
		}
		weights = append(weights, W.RawMatrix().Data...)
	}
	if c.Interval > 0 {
		for _, st := range stats {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b, err := f.calibrate(st)
			if err != nil {
				return nil, err
			}
			weights = append(weights, b...)
		}
	}
	meta := models.Meta{Name: spec.Name, Family: spec.Family, Zone: spec.Zone, Signal: spec.Signal, Lookback: c.Lookback, Horizon: c.Horizon}
	return New(meta, c, weights, f.info)
}

// badPrefix returns the running count of non-finite values: bad[j] counts
// those in v[:j].
func badPrefix(v []float64) []int {
	bad := make([]int, len(v)+1)
	for i, x := range v {
		bad[i+1] = bad[i]
		if math.IsNaN(x) || math.IsInf(x, 0) {
			bad[i+1]++
		}
	}
	return bad
}
