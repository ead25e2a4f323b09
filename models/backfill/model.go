package backfill

import (
	"cmp"
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/retry"
	"github.com/carbongate/carbongate/models"
)

// Input is one forecast to issue: Lookback hours of history, oldest first,
// ending the hour before Start.
type Input struct {
	History []float64
	Start   time.Time
}

// Output is one issued forecast: Horizon values; Lower and Upper are nil
// when the model gives no prediction interval, else as long as Values.
type Output struct {
	Values, Lower, Upper []float64
}

// Predictor runs a model on a batch. Predict returns one Output per Input,
// in order, or an error for the whole batch: EUNAVAILABLE when the model is
// unreachable or not ready (worth a retry), EINVALID for a batch or an
// answer outside the contract. Implementations are safe for concurrent use.
type Predictor interface {
	Predict(ctx context.Context, batch []Input) ([]Output, error)
}

// Model is the model of one zone: what is written into the rows' key, the
// contract sizes and how to call it.
type Model struct {
	Name      string // model_name of the rows
	Version   string // model_version of the rows
	Lookback  int    // L: hours of history per input
	Horizon   int    // H: hours per output (≥ the plan's horizon)
	Predictor Predictor
}

// InProcess is a Predictor of a models.Model run in this process; an
// IntervalModel also gives the interval.
type InProcess struct{ Model models.Model }

var _ Predictor = InProcess{}

// Predict implements Predictor.
func (p InProcess) Predict(ctx context.Context, batch []Input) ([]Output, error) {
	h := p.Model.Meta().Horizon
	im, interval := p.Model.(models.IntervalModel)
	out := make([]Output, len(batch))
	for i, in := range batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := Output{Values: make([]float64, h)}
		var err error
		if interval {
			o.Lower, o.Upper = make([]float64, h), make([]float64, h)
			err = im.PredictInterval(in.History, in.Start, o.Values, o.Lower, o.Upper)
		} else {
			err = p.Model.Predict(in.History, in.Start, o.Values)
		}
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// InProcessModel describes m for a backfill with the given version.
func InProcessModel(m models.Model, version string) Model {
	meta := m.Meta()
	return Model{Name: meta.Name, Version: version, Lookback: meta.Lookback, Horizon: meta.Horizon, Predictor: InProcess{Model: m}}
}

// Retry is a Predictor that gives each call of Next its own deadline and
// retries calls failing with EUNAVAILABLE with exponential backoff and
// jitter (internal/retry), so that shards failing on the same server at
// once do not come back in lock-step.
type Retry struct {
	Next Predictor
	// Attempts is the number of calls at most (default 4).
	Attempts int
	// Timeout is the deadline of one call (default 30 s).
	Timeout time.Duration
	// Backoff is the nominal wait after the first failure, doubled after
	// each further one up to MaxBackoff (defaults 250 ms and 5 s); each
	// wait is drawn from [nominal/2, nominal).
	Backoff, MaxBackoff time.Duration
	// OnRetry, when set, is called before each wait.
	OnRetry func(attempt int, wait time.Duration, err error)
	// Sleep waits d or until ctx ends (default: a timer); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand draws the jitter, in [0, 1) (default: math/rand/v2); tests
	// replace it.
	Rand func() float64
}

// Predict implements Predictor. After the last attempt the error of the
// last call is returned; ctx's end stops retrying at once.
func (r Retry) Predict(ctx context.Context, batch []Input) ([]Output, error) {
	timeout := cmp.Or(r.Timeout, 30*time.Second)
	p := retry.Policy{
		Attempts: cmp.Or(r.Attempts, 4),
		Base:     cmp.Or(r.Backoff, 250*time.Millisecond), Cap: cmp.Or(r.MaxBackoff, 5*time.Second),
		Retryable: retryable, OnRetry: r.OnRetry, Sleep: r.Sleep, Rand: r.Rand,
	}
	var out []Output
	err := p.Do(ctx, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var err error
		out, err = r.Next.Predict(cctx, batch)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retryable: the model is unreachable, not ready or was too slow.
func retryable(err error) bool {
	return forecast.ErrorCode(err) == forecast.EUNAVAILABLE || isDeadline(err)
}

// checkOutput verifies one output against the model and the plan's horizon.
func checkOutput(m Model, o Output, hours int) error {
	if len(o.Values) < hours {
		return forecast.Errorf(forecast.EINVALID, "model %s returned %d hours, the backfill needs %d", m.Name, len(o.Values), hours)
	}
	if (o.Lower == nil) != (o.Upper == nil) || (o.Lower != nil && (len(o.Lower) < hours || len(o.Upper) < hours)) {
		return forecast.Errorf(forecast.EINVALID, "model %s returned an incomplete prediction interval", m.Name)
	}
	for _, v := range o.Values[:hours] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return forecast.Errorf(forecast.EINVALID, "model %s returned a non-finite forecast", m.Name)
		}
	}
	return nil
}
