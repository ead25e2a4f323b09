package ridge

import (
	"math"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
)

// Model is a fitted ridge forecaster. It is immutable and safe for
// concurrent use; Predict allocates nothing.
type Model struct {
	meta models.Meta
	cfg  Config
	// w holds Origins blocks of NumFeatures × Horizon weights, row-major:
	// w[(o*NumFeatures+j)*H+h] is feature j's weight for lead h when the
	// issue hour of day is o (o = 0 when Origins is 1).
	w    []float64
	info models.TrainingInfo
}

var (
	_ models.Model   = (*Model)(nil)
	_ models.Trained = (*Model)(nil)
)

// New assembles a model from its parts, as an artifact loader does. meta's
// Lookback and Horizon must match cfg and weights must hold
// cfg.NumFeatures()×cfg.Horizon values; otherwise EINVALID. New copies
// weights.
func New(meta models.Meta, cfg Config, weights []float64, info models.TrainingInfo) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if meta.Lookback != cfg.Lookback || meta.Horizon != cfg.Horizon {
		return nil, forecast.Errorf(forecast.EINVALID, "ridge meta says L=%d H=%d, config says L=%d H=%d", meta.Lookback, meta.Horizon, cfg.Lookback, cfg.Horizon)
	}
	if want := cfg.NumWeights(); len(weights) != want {
		return nil, forecast.Errorf(forecast.EINVALID, "ridge needs %d weights (%d origins × %d features × %d hours), got %d", want, cfg.Origins, cfg.NumFeatures(), cfg.Horizon, len(weights))
	}
	for i, v := range weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, forecast.Errorf(forecast.EINVALID, "ridge weight %d is not finite", i)
		}
	}
	info.Zones = slices.Clone(info.Zones)
	return &Model{meta: meta, cfg: cfg.Clone(), w: slices.Clone(weights), info: info}, nil
}

// Meta implements models.Model.
func (m *Model) Meta() models.Meta { return m.meta }

// Config returns a copy of the model's configuration.
func (m *Model) Config() Config { return m.cfg.Clone() }

// Weights returns a copy of the weights, Origins × NumFeatures × Horizon
// row-major.
func (m *Model) Weights() []float64 { return slices.Clone(m.w) }

// Training implements models.Trained.
func (m *Model) Training() models.TrainingInfo {
	info := m.info
	info.Zones = slices.Clone(info.Zones)
	return info
}

// Predict implements models.Model.
func (m *Model) Predict(history []float64, start time.Time, out []float64) error {
	if err := models.CheckInput(m.meta, history, start, out); err != nil {
		return err
	}
	c := &m.cfg
	H, L := c.Horizon, c.Lookback
	mu, sd := scale(c.Scaling, history[L-c.NormWindow:])
	tf := c.Scaling == ScaleLog
	p := c.NumFeatures()
	w := m.w[origin(c, start)*p*H:][:p*H]
	copy(out, w[:H])
	for k, lag := range c.Lags {
		z := (transform(tf, history[L-lag]) - mu) / sd
		row := w[(1+k)*H : (2+k)*H]
		for h, w := range row {
			out[h] += z * w
		}
	}
	var idx [2]int
	for _, j := range calendarIndex(c.Calendar, start, idx[:0]) {
		j += 1 + len(c.Lags)
		row := w[j*H : (j+1)*H]
		for h, w := range row {
			out[h] += w
		}
	}
	for h, v := range out {
		out[h] = mu + sd*v
	}
	if tf {
		for h, v := range out {
			out[h] = math.Exp(v)
		}
	}
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

// scale returns the centre and the (floored) scale of a sample whose history
// window ends with w, both in the model's working space.
func scale(how Scaling, w []float64) (mu, sd float64) {
	var s float64
	if how == ScaleLog {
		for _, v := range w {
			s += transform(true, v)
		}
		return s / float64(len(w)), 1
	}
	for _, v := range w {
		s += v
	}
	mu = s / float64(len(w))
	if how == ScaleLevel {
		return mu, max(math.Abs(mu), minScale)
	}
	var q float64
	for _, v := range w {
		d := v - mu
		q += d * d
	}
	sd = math.Sqrt(q / float64(len(w)))
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

// features writes the feature row of one sample into row (len NumFeatures)
// and returns the sample's mean and scale.
func features(c *Config, history []float64, start time.Time, row []float64) (mu, sd float64) {
	L := c.Lookback
	mu, sd = scale(c.Scaling, history[L-c.NormWindow:])
	clear(row)
	row[0] = 1
	tf := c.Scaling == ScaleLog
	for k, lag := range c.Lags {
		row[1+k] = (transform(tf, history[L-lag]) - mu) / sd
	}
	var idx [2]int
	for _, j := range calendarIndex(c.Calendar, start, idx[:0]) {
		row[1+len(c.Lags)+j] = 1
	}
	return mu, sd
}
