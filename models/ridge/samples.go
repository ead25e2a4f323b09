package ridge

import (
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/conformal"
)

// series is one input cut at the training cut-off with its complete
// samples.
type series struct {
	zone forecast.Zone
	s    forecast.Series
	tv   []float64 // working-space values of s (transform)
	// dsum[j] is the sum of |log v[i] − log v[i−24]| over 24 ≤ i < j
	// (conformal.Difficulty in O(1)); nil without an interval.
	dsum    []float64
	samples []sample
}

// difficulty returns conformal.Difficulty of the Lookback hours before
// position i, from the running sums.
func (in *series) difficulty(c *Config, i int) float64 {
	w := min(c.Lookback-24, conformal.DifficultyWindow)
	if w <= 0 {
		return 1
	}
	return max((in.dsum[i]-in.dsum[i-w])/float64(w), conformal.MinDifficulty)
}

func difficultySums(v []float64) []float64 {
	s := make([]float64, len(v)+1)
	for i := range v {
		s[i+1] = s[i]
		if i >= 24 {
			s[i+1] += math.Abs(math.Log(max(v[i], conformal.Floor)) - math.Log(max(v[i-24], conformal.Floor)))
		}
	}
	return s
}

// sample is one complete training sample.
type sample struct {
	i     int // position of the issue hour in the series
	start time.Time
	fold  int
	edge  bool // its targets reach into the next block
}

// fitter holds what every origin's fit reads.
type fitter struct {
	spec   *Spec
	c      *Config
	in     []series
	first  time.Time // first issue time of any sample
	span   time.Duration
	info   models.TrainingInfo
	nFolds int
}

func newFitter(spec *Spec, c *Config, data []Input) (*fitter, error) {
	L, H := c.Lookback, c.Horizon
	f := &fitter{spec: spec, c: c, info: models.TrainingInfo{Until: spec.Until}, nFolds: max(c.Folds, 1)}
	var last time.Time
	for _, in := range data {
		s := in.Series
		if !spec.Until.IsZero() {
			s = s.Window(s.Start, spec.Until)
		}
		bad := badPrefix(s.Values)
		var issues []int
		for i := L; i+H <= len(s.Values); i += c.Stride {
			if bad[i+H]-bad[i-L] == 0 {
				issues = append(issues, i)
			}
		}
		if len(issues) == 0 {
			continue
		}
		tv := make([]float64, len(s.Values))
		for j, x := range s.Values {
			tv[j] = transform(c.Scaling == ScaleLog, x)
		}
		f.in = append(f.in, series{zone: in.Zone, s: s, tv: tv, samples: make([]sample, len(issues))})
		if c.Interval > 0 {
			f.in[len(f.in)-1].dsum = difficultySums(s.Values)
		}
		f.info.Samples += len(issues)
		for k, i := range issues {
			f.in[len(f.in)-1].samples[k] = sample{i: i, start: s.Start.Add(time.Duration(i) * forecast.Hour)}
		}
		if !slices.Contains(f.info.Zones, in.Zone) {
			f.info.Zones = append(f.info.Zones, in.Zone)
		}
		at := func(i int) time.Time { return s.Start.Add(time.Duration(i) * forecast.Hour) }
		if from := at(issues[0] - L); f.info.From.IsZero() || from.Before(f.info.From) {
			f.info.From = from
		}
		if t := at(issues[0]); f.first.IsZero() || t.Before(f.first) {
			f.first = t
		}
		if t := at(issues[len(issues)-1]); t.After(last) {
			last = t
		}
		if end := at(issues[len(issues)-1] + H); spec.Until.IsZero() && end.After(f.info.Until) {
			f.info.Until = end
		}
	}
	if len(f.in) == 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "no complete training sample of %d+%d finite hours for %s", L, H, spec.Name)
	}
	f.span = last.Sub(f.first) + forecast.Hour
	for _, in := range f.in {
		for k := range in.samples {
			sm := &in.samples[k]
			sm.fold, sm.edge = f.fold(sm.start)
		}
	}
	return f, nil
}

// fold returns the block of issue time t and whether the sample's targets
// reach into the next block.
func (f *fitter) fold(t time.Time) (int, bool) {
	if f.nFolds == 1 {
		return 0, false
	}
	k := int(int64(t.Sub(f.first)) * int64(f.nFolds) / int64(f.span))
	k = min(k, f.nFolds-1)
	next := f.first.Add(time.Duration(int64(f.span) * int64(k+1) / int64(f.nFolds)))
	return k, k < f.nFolds-1 && t.Add(time.Duration(f.c.Horizon)*forecast.Hour).After(next)
}

// inOrigin reports whether issue time t feeds the fit of origin o.
func (f *fitter) inOrigin(t time.Time, o int) (member, own bool) {
	if f.c.Origins == 1 {
		return true, true
	}
	d := (t.UTC().Hour() - o + 24) % 24
	d = min(d, 24-d)
	return d <= f.c.OriginWidth, d == 0
}

// block is the rows of some samples: X (NumFeatures columns, plus mu and
// sd when asked) and Y (Horizon columns, working space, scaled).
type block struct{ X, Y *mat.Dense }

// rows returns, per fold, the feature and target rows of the samples of
// origin o in that block (core, which includes the edge) and of its edge.
// With own only samples issued exactly at hour o are taken, and each X row
// ends with the sample's mu, sd and conformal.Difficulty (NumFeatures+3
// columns).
func (f *fitter) rows(o int, own bool) (core, edge []block) {
	c := f.c
	L, H, p := c.Lookback, c.Horizon, c.NumFeatures()
	width := p
	if own {
		width += 3
	}
	xc, yc := make([][]float64, f.nFolds), make([][]float64, f.nFolds)
	xe, ye := make([][]float64, f.nFolds), make([][]float64, f.nFolds)
	for _, in := range f.in {
		for _, sm := range in.samples {
			member, isOwn := f.inOrigin(sm.start, o)
			if !member || (own && !isOwn) {
				continue
			}
			k := sm.fold
			n := len(xc[k])
			xc[k] = slices.Grow(xc[k], width)[:n+width]
			mu, sd := features(c, in.tv[sm.i-L:sm.i], sm.start, xc[k][n:n+p])
			if own {
				xc[k][n+p], xc[k][n+p+1], xc[k][n+p+2] = mu, sd, in.difficulty(c, sm.i)
			}
			m := len(yc[k])
			for _, t := range in.tv[sm.i : sm.i+H] {
				yc[k] = append(yc[k], (t-mu)/sd)
			}
			if sm.edge {
				xe[k] = append(xe[k], xc[k][n:]...)
				ye[k] = append(ye[k], yc[k][m:]...)
			}
		}
	}
	core, edge = make([]block, f.nFolds), make([]block, f.nFolds)
	for k := range f.nFolds {
		core[k] = block{dense(xc[k], width), dense(yc[k], H)}
		edge[k] = block{dense(xe[k], width), dense(ye[k], H)}
	}
	return core, edge
}

func dense(v []float64, cols int) *mat.Dense {
	if len(v) == 0 {
		return &mat.Dense{}
	}
	return mat.NewDense(len(v)/cols, cols, v)
}
