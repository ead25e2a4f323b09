package ridge

import (
	"math"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/conformal"
)

// Model is a fitted ridge forecaster. It is immutable and safe for
// concurrent use; Predict allocates nothing. A Model whose configuration
// has an Interval also stores calibrated interval bounds; Serving returns
// it as a models.IntervalModel.
type Model struct {
	meta models.Meta
	cfg  Config
	// w holds Origins blocks of NumFeatures × Horizon weights, row-major:
	// w[(o*NumFeatures+j)*H+h] is feature j's weight for lead h when the
	// issue hour of day is o (o = 0 when Origins is 1).
	w []float64
	// bounds holds, per origin, the lower then the upper bound of each
	// lead hour, log ratios in units of the history's
	// conformal.Difficulty; empty without an interval.
	bounds []float64
	info   models.TrainingInfo
}

// Bounded is a ridge Model with a prediction interval.
type Bounded struct{ *Model }

var (
	_ models.Model         = (*Model)(nil)
	_ models.Trained       = (*Model)(nil)
	_ models.IntervalModel = Bounded{}
)

// New assembles a model from its parts, as an artifact loader does. meta's
// Lookback and Horizon must match cfg and weights must hold
// cfg.NumWeights() regression weights followed by cfg.NumBounds() interval
// bounds (see Weights); otherwise EINVALID. New copies weights.
func New(meta models.Meta, cfg Config, weights []float64, info models.TrainingInfo) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if meta.Lookback != cfg.Lookback || meta.Horizon != cfg.Horizon {
		return nil, forecast.Errorf(forecast.EINVALID, "ridge meta says L=%d H=%d, config says L=%d H=%d", meta.Lookback, meta.Horizon, cfg.Lookback, cfg.Horizon)
	}
	nw, nb := cfg.NumWeights(), cfg.NumBounds()
	if len(weights) != nw+nb {
		return nil, forecast.Errorf(forecast.EINVALID, "ridge needs %d weights (%d origins × %d features × %d hours) and %d interval bounds, got %d values", nw, cfg.Origins, cfg.NumFeatures(), cfg.Horizon, nb, len(weights))
	}
	for i, v := range weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, forecast.Errorf(forecast.EINVALID, "ridge weight %d is not finite", i)
		}
	}
	H := cfg.Horizon
	for o := range nb / (2 * H) {
		lo, hi := weights[nw+2*o*H:][:H], weights[nw+(2*o+1)*H:][:H]
		for h := range lo {
			if lo[h] > hi[h] {
				return nil, forecast.Errorf(forecast.EINVALID, "ridge interval of origin %d lead %d has lower bound %v above upper %v", o, h, lo[h], hi[h])
			}
		}
	}
	info.Zones = slices.Clone(info.Zones)
	all := slices.Clone(weights)
	return &Model{meta: meta, cfg: cfg.Clone(), w: all[:nw:nw], bounds: all[nw:], info: info}, nil
}

// Meta implements models.Model.
func (m *Model) Meta() models.Meta { return m.meta }

// Config returns a copy of the model's configuration.
func (m *Model) Config() Config { return m.cfg.Clone() }

// Weights returns a copy of the regression weights (Origins × NumFeatures
// × Horizon, row-major) followed by the interval bounds, if any (per
// origin, Horizon lower then Horizon upper log-ratio bounds).
func (m *Model) Weights() []float64 { return slices.Concat(m.w, m.bounds) }

// Training implements models.Trained.
func (m *Model) Training() models.TrainingInfo {
	info := m.info
	info.Zones = slices.Clone(info.Zones)
	return info
}

// Serving returns the model as served: Bounded{m} when it has an
// interval, m otherwise.
func (m *Model) Serving() models.Model {
	if len(m.bounds) > 0 {
		return Bounded{m}
	}
	return m
}

// Level returns the nominal coverage of the interval, 0 without one.
func (m *Model) Level() float64 { return m.cfg.Interval }

// Predict implements models.Model.
func (m *Model) Predict(history []float64, start time.Time, out []float64) error {
	if err := models.CheckInput(m.meta, history, start, out); err != nil {
		return err
	}
	c := &m.cfg
	H := c.Horizon
	tf := c.Scaling == ScaleLog
	get := func(i int) float64 { return transform(tf, history[i]) }
	mu, sd := scale(c, get)
	w := m.w[origin(c, start)*c.NumFeatures()*H:][:c.NumFeatures()*H]
	copy(out, w[:H])
	c.visit(get, start, mu, sd, func(j int, z float64) {
		row := w[j*H : (j+1)*H]
		for h, w := range row {
			out[h] += z * w
		}
	})
	for h, v := range out {
		out[h] = mu + sd*v
	}
	if c.Scaling == ScaleLog {
		for h, v := range out {
			out[h] = math.Exp(v)
		}
	}
	return nil
}

// PredictInterval implements models.IntervalModel: the point forecast and
// the calibrated interval around it, whose log-ratio bounds are scaled by
// the history's conformal.Difficulty (conformal.Apply).
func (b Bounded) PredictInterval(history []float64, start time.Time, out, lower, upper []float64) error {
	H := b.cfg.Horizon
	if len(lower) != H || len(upper) != H {
		return forecast.FieldErrorf(forecast.EINVALID, "forecast", "interval outputs have %d and %d hours, model %s writes %d", len(lower), len(upper), b.meta.Family, H)
	}
	if err := b.Predict(history, start, out); err != nil {
		return err
	}
	o := origin(&b.cfg, start)
	conformal.Apply(out, b.bounds[2*o*H:][:H], b.bounds[(2*o+1)*H:][:H], conformal.Difficulty(history), lower, upper)
	return nil
}

// Scale floors: a window flatter than this is scaled by the floor, so a
// constant history does not divide by zero.
const (
	minScaleFrac = 0.01 // of the window's |mean|
	minScale     = 1e-3 // absolute, gCO2eq/kWh
)

// transform maps a value to the model's working space: its log (floored at
// minScale) when log is set, itself otherwise.
func transform(log bool, v float64) float64 {
	if log {
		return math.Log(max(v, minScale))
	}
	return v
}

// scale returns the centre and the (floored) scale of a sample, both in
// the model's working space; get(i) is the working-space value of history
// hour i (0 = oldest of Lookback).
func scale(c *Config, get func(int) float64) (mu, sd float64) {
	from, to := c.Lookback-c.NormWindow, c.Lookback
	var s float64
	for i := from; i < to; i++ {
		s += get(i)
	}
	mu = s / float64(to-from)
	switch c.Scaling {
	case ScaleLog:
		return mu, 1
	case ScaleLevel:
		return mu, max(math.Abs(mu), minScale)
	}
	var q float64
	for i := from; i < to; i++ {
		d := get(i) - mu
		q += d * d
	}
	sd = math.Sqrt(q / float64(to-from))
	return mu, max(sd, minScaleFrac*math.Abs(mu), minScale)
}

// calendarIndex appends the indices (within the calendar block) of the
// one-hot features that are set for issue hour start.
func calendarIndex(c Calendar, start time.Time, dst []int) []int {
	t := start.UTC()
	switch c {
	case CalendarHourWeekday:
		return append(dst, t.Hour(), 24+int(t.Weekday()))
	case CalendarHourOfWeek:
		return append(dst, int(t.Weekday())*24+t.Hour())
	}
	return dst
}

// origin returns the weight block used for issue hour start.
func origin(c *Config, start time.Time) int {
	if c.Origins == 1 {
		return 0
	}
	return start.UTC().Hour()
}

// visit calls f(j, z) for every feature j ≥ 1 of a sample (lags, profile,
// daily means, the calendar one-hots that are set) whose first forecast
// hour is start; get(i) is the working-space value of history hour i and
// mu and sd are the sample's scale.
func (c *Config) visit(get func(int) float64, start time.Time, mu, sd float64, f func(j int, z float64)) {
	L := c.Lookback
	z := func(i int) float64 { return (get(i) - mu) / sd }
	for k, lag := range c.Lags {
		f(1+k, z(L-lag))
	}
	if p := c.Profile; p > 0 {
		off := c.profileOffset()
		for j := range 24 {
			var s float64
			for k := 1; k <= p; k++ {
				s += z(L - 24*k + j)
			}
			f(off+j, s/float64(p))
		}
	}
	off := c.meansOffset()
	for d := range c.DailyMeans {
		var s float64
		for i := L - 24*(d+1); i < L-24*d; i++ {
			s += z(i)
		}
		f(off+d, s/24)
	}
	var idx [2]int
	for _, j := range calendarIndex(c.Calendar, start, idx[:0]) {
		f(c.calendarOffset()+j, 1)
	}
}

// features writes the feature row of one sample into row (len NumFeatures)
// and returns the sample's mean and scale; tv holds the working-space
// values of its Lookback hours of history.
func features(c *Config, tv []float64, start time.Time, row []float64) (mu, sd float64) {
	get := func(i int) float64 { return tv[i] }
	mu, sd = scale(c, get)
	clear(row)
	row[0] = 1
	c.visit(get, start, mu, sd, func(j int, z float64) { row[j] = z })
	return mu, sd
}
