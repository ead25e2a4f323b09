package ridge

import (
	"context"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

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

// chunkRows is the number of samples whose features are materialised at a
// time; the normal equations are accumulated chunk by chunk, so memory does
// not grow with the number of samples.
const chunkRows = 2048

// Fit fits a ridge model on every complete sample of the inputs: each issue
// hour t (every Config.Stride hours) with Lookback finite hours before t and
// Horizon finite hours from t on, all before spec.Until. It minimises
// Σ‖y − xW‖² + λ·n·‖W‖² over the scaled samples, the intercept unpenalised,
// for all lead hours at once. EINVALID for a bad config or no complete
// sample; ctx is checked between chunks.
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
	info := models.TrainingInfo{Until: spec.Until}
	weights := make([]float64, 0, c.NumWeights())
	for o := range c.Origins {
		w, err := fitOrigin(ctx, &spec, &c, data, o, &info)
		if err != nil {
			return nil, err
		}
		weights = append(weights, w...)
	}
	meta := models.Meta{Name: spec.Name, Family: spec.Family, Zone: spec.Zone, Signal: spec.Signal, Lookback: c.Lookback, Horizon: c.Horizon}
	return New(meta, c, weights, info)
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

// fitOrigin solves the weights of issue hours o (mod Origins) and adds its
// samples to info.
func fitOrigin(ctx context.Context, spec *Spec, c *Config, data []Input, o int, info *models.TrainingInfo) ([]float64, error) {
	L, H, p := c.Lookback, c.Horizon, c.NumFeatures()
	G := mat.NewSymDense(p, nil)
	B := mat.NewDense(p, H, nil)
	xbuf := make([]float64, chunkRows*p)
	ybuf := make([]float64, chunkRows*H)
	var bc mat.Dense
	rows, samples := 0, 0
	flush := func() error {
		if rows == 0 {
			return nil
		}
		X := mat.NewDense(rows, p, xbuf[:rows*p])
		Y := mat.NewDense(rows, H, ybuf[:rows*H])
		G.SymRankK(G, 1, X.T())
		bc.Reset()
		bc.Mul(X.T(), Y)
		B.Add(B, &bc)
		samples += rows
		rows = 0
		return ctx.Err()
	}
	for _, in := range data {
		s := in.Series
		if !spec.Until.IsZero() {
			s = s.Window(s.Start, spec.Until)
		}
		v := s.Values
		bad := badPrefix(v)
		used := false
		for i := L; i+H <= len(v); i += c.Stride {
			start := s.Start.Add(time.Duration(i) * forecast.Hour)
			if origin(c, start) != o || bad[i+H]-bad[i-L] > 0 {
				continue
			}
			x := xbuf[rows*p : (rows+1)*p]
			mu, sd := features(c, v[i-L:i], start, x)
			y := ybuf[rows*H : (rows+1)*H]
			for h := range y {
				y[h] = (transform(c.Scaling == ScaleLog, v[i+h]) - mu) / sd
			}
			if !used {
				used = true
				if !slices.Contains(info.Zones, in.Zone) {
					info.Zones = append(info.Zones, in.Zone)
				}
				if from := s.Start.Add(time.Duration(i-L) * forecast.Hour); info.From.IsZero() || from.Before(info.From) {
					info.From = from
				}
			}
			if end := start.Add(time.Duration(H) * forecast.Hour); spec.Until.IsZero() && end.After(info.Until) {
				info.Until = end
			}
			if rows++; rows == chunkRows {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if samples == 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "no complete training sample of %d+%d finite hours for %s (origin %d)", L, H, spec.Name, o)
	}
	info.Samples += samples
	penalty := c.Lambda * float64(samples)
	for j := 1; j < p; j++ {
		G.SetSym(j, j, G.At(j, j)+penalty)
	}
	var chol mat.Cholesky
	if ok := chol.Factorize(G); !ok {
		return nil, forecast.Errorf(forecast.EINVALID, "ridge normal equations of %s are singular; raise lambda", spec.Name)
	}
	W := mat.NewDense(p, H, nil)
	if err := chol.SolveTo(W, B); err != nil {
		return nil, &forecast.Error{Code: forecast.EINTERNAL, Message: "ridge solve failed", Err: err}
	}
	return W.RawMatrix().Data, nil
}
