// Package remote is a forecast.Forecaster over one OIP model endpoint (a
// route.Endpoint and its oip.Client): it validates the model against the
// forecaster tensor contract once (ModelMetadata + oip.ContractOf), sends
// the zone's history with B = 1, parses the answer with
// oip.ParseForecastResponse, retries "not ready" answers (KServe cold
// start) while the deadline allows, and fails fast behind a circuit
// breaker when the endpoint keeps failing.
package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/remote/breaker"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/internal/retry"
	"github.com/carbongate/carbongate/oip"
)

// Defaults of Config.
const (
	DefaultBackoff    = 25 * time.Millisecond
	DefaultMaxBackoff = 200 * time.Millisecond
)

// Config configures a Forecaster.
type Config struct {
	Endpoint route.Endpoint   // required: Model names the OIP model
	Client   oip.Client       // required; owned by the Forecaster, closed by Close
	History  forecast.History // required: the observed data sent as input
	// Signal is the signal the model forecasts (route.Endpoint does not
	// say); requests for another signal are ENOTFOUND. Default lifecycle.
	Signal forecast.Signal
	// Timeout bounds one Forecast call, retries included; the caller's
	// deadline applies too, whichever is earlier. 0: the caller's only.
	Timeout time.Duration
	// Backoff is the first nominal pause before retrying a "not ready"
	// answer; it doubles up to MaxBackoff, and each pause is drawn from
	// [nominal/2, nominal) (jitter: replicas and requests that met the
	// same cold start do not retry together). A retry is made only when
	// the deadline leaves room for the pause. Defaults DefaultBackoff,
	// DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Rand draws the jitter, in [0, 1); nil: math/rand/v2.
	Rand    func() float64
	Breaker breaker.Config // Failures and Cooldown; OnChange is set by New
	Metrics *Metrics       // nil: none
}

// Forecaster is safe for concurrent use.
type Forecaster struct {
	cfg    Config
	label  string
	source forecast.Source
	br     *breaker.Breaker
	seq    atomic.Uint64

	mu       sync.Mutex
	contract *validated // nil: validate before the next call
	closed   bool
	inflight sync.WaitGroup
}

// validated is a model's contract as its metadata declared it.
type validated struct {
	oip.Contract
	versions []string
}

var _ forecast.Forecaster = (*Forecaster)(nil)

// New validates cfg and returns a Forecaster. It makes no call: the model
// is validated on first use.
func New(cfg Config) (*Forecaster, error) {
	if cfg.Client == nil || cfg.History == nil || cfg.Endpoint.Model == "" {
		return nil, forecast.Errorf(forecast.EINVALID, "remote: Client, History and Endpoint.Model are required")
	}
	if cfg.Timeout < 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "remote: Timeout must be ≥ 0")
	}
	if cfg.Signal == "" {
		cfg.Signal = forecast.SignalLifecycle
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.Backoff)
	}
	f := &Forecaster{cfg: cfg, label: Label(cfg.Endpoint), source: forecast.SourceZone}
	if cfg.Endpoint.Generic() {
		f.source = forecast.SourceGeneric
	}
	bc := cfg.Breaker
	bc.OnChange = func(s breaker.State) { cfg.Metrics.state(f.label, float64(s)) }
	f.br = breaker.New(bc)
	cfg.Metrics.state(f.label, float64(breaker.Closed))
	return f, nil
}

// Endpoint returns the endpoint the Forecaster calls.
func (f *Forecaster) Endpoint() route.Endpoint { return f.cfg.Endpoint }

// Breaker returns the endpoint's circuit breaker state.
func (f *Forecaster) Breaker() breaker.State { return f.br.State() }

// Close refuses new calls, waits for the calls in flight (each bounded by
// its deadline) and closes the client. It is safe to call more than once.
func (f *Forecaster) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.inflight.Wait()
	return f.cfg.Client.Close()
}

// Forecast implements forecast.Forecaster: the model's forecast of
// req.Horizon hours from req.Start, with Provenance{Model: the endpoint's
// model, Version: the response's model_version, Source: zone or generic}.
//
// Errors: EINVALID for a request that is not hour-aligned or asks more
// hours than the model's horizon; ENOTFOUND for another signal (or the
// wrong zone of a zone model); the History's error when the input is not
// available; EUNAVAILABLE for everything the endpoint does wrong — circuit
// open, unreachable, not ready, too slow, an answer outside the contract —
// with a message naming the model and what happened. The caller's own
// context error is returned as it is.
func (f *Forecaster) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return forecast.Forecast{}, f.errorf(nil, "endpoint no longer routed")
	}
	f.inflight.Add(1)
	f.mu.Unlock()
	defer f.inflight.Done()

	if req.Signal != f.cfg.Signal {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.ENOTFOUND, "signal", "model %s forecasts the %s signal, not %q", f.cfg.Endpoint.Model, f.cfg.Signal, req.Signal)
	}
	if !f.cfg.Endpoint.Generic() && req.Zone != f.cfg.Endpoint.Zone {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.ENOTFOUND, "zone", "model %s forecasts zone %s, not %s", f.cfg.Endpoint.Model, f.cfg.Endpoint.Zone, req.Zone)
	}
	if req.Horizon < 1 || req.Start.IsZero() || !req.Start.Equal(forecast.HourFloor(req.Start)) {
		return forecast.Forecast{}, forecast.Errorf(forecast.EINVALID, "forecast request needs a horizon ≥ 1 and an hour-aligned start, got %d and %s", req.Horizon, req.Start)
	}
	done, ok := f.br.Allow()
	if !ok {
		f.cfg.Metrics.observe(f.label, OutcomeCircuitOpen, 0)
		return forecast.Forecast{}, f.errorf(nil, "circuit open")
	}
	parent := ctx
	if f.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.cfg.Timeout)
		defer cancel()
	}
	t0 := time.Now()
	fc, outcome, err := f.forecast(ctx, req)
	if err != nil && parent.Err() != nil && outcome != OutcomeRejected {
		// The caller gave up or ran out of time: say which, and learn
		// about the upstream only when it was too slow for the deadline.
		if errors.Is(parent.Err(), context.Canceled) {
			outcome, err = OutcomeCanceled, parent.Err()
		} else {
			outcome, err = OutcomeTimeout, parent.Err()
		}
	} else if err != nil && errors.Is(err, context.DeadlineExceeded) {
		outcome = OutcomeTimeout
		err = f.errorf(err, "timed out after %v", f.cfg.Timeout)
	}
	switch outcome {
	case OutcomeOK:
		done(breaker.Success)
	case OutcomeCanceled, OutcomeRejected:
		done(breaker.Ignore)
	default:
		done(breaker.Failure)
	}
	f.cfg.Metrics.observe(f.label, outcome, time.Since(t0).Seconds())
	return fc, err
}

// forecast makes the calls and classifies the outcome.
func (f *Forecaster) forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, string, error) {
	c, outcome, err := f.validate(ctx)
	if err != nil {
		return forecast.Forecast{}, outcome, err
	}
	if c.Horizon > 0 && req.Horizon > c.Horizon {
		return forecast.Forecast{}, OutcomeRejected, forecast.FieldErrorf(forecast.EINVALID, "horizon",
			"model %s forecasts %d hours, %d asked", f.cfg.Endpoint.Model, c.Horizon, req.Horizon)
	}
	start := req.Start.UTC()
	hist, err := f.cfg.History.Last(ctx, req.Zone, req.Signal, start, c.Lookback)
	if err != nil {
		return forecast.Forecast{}, OutcomeRejected, err
	}
	id := string(req.Zone) + "-" + strconv.FormatInt(start.Unix(), 10) + "-" + strconv.FormatUint(f.seq.Add(1), 10)
	ireq, err := oip.NewForecastRequest(id, [][]float64{hist}, []time.Time{start})
	if err != nil {
		return forecast.Forecast{}, OutcomeRejected, err
	}
	var resp *oip.InferenceResponse
	err = f.retry(ctx, func() error {
		var err error
		resp, err = f.cfg.Client.Infer(ctx, f.cfg.Endpoint.Model, "", ireq)
		return err
	})
	if err != nil {
		if forecast.ErrorCode(err) == forecast.ENOTFOUND {
			f.invalidate() // the model moved: read its metadata again
		}
		return forecast.Forecast{}, classify(err), f.errorf(err, "%s", forecast.ErrorMessage(err))
	}
	rows, lower, upper, err := oip.ParseForecastResponse(resp, 1, c.Contract)
	if err != nil {
		f.invalidate()
		return forecast.Forecast{}, OutcomeBadResponse, f.errorf(err, "answer outside the forecaster contract: %s", forecast.ErrorMessage(err))
	}
	if len(rows[0]) < req.Horizon {
		f.invalidate()
		return forecast.Forecast{}, OutcomeBadResponse, f.errorf(nil, "answered %d hours, %d asked", len(rows[0]), req.Horizon)
	}
	if v := resp.ModelVersion; v != "" && len(c.versions) > 0 && !slices.Contains(c.versions, v) {
		f.invalidate() // a new version is serving: validate it on the next call
	}
	out := forecast.Forecast{
		Zone: req.Zone, Signal: req.Signal,
		Series: forecast.Series{Start: start, Values: rows[0][:req.Horizon:req.Horizon]},
		Provenance: forecast.Provenance{
			Model: f.cfg.Endpoint.Model, Version: resp.ModelVersion, Source: f.source, IssuedAt: start,
		},
	}
	if lower != nil && upper != nil {
		out.Lower, out.Upper = lower[0][:req.Horizon:req.Horizon], upper[0][:req.Horizon:req.Horizon]
	}
	return out, OutcomeOK, nil
}

// validate returns the model's contract, reading and checking its metadata
// when it is not known yet.
func (f *Forecaster) validate(ctx context.Context) (*validated, string, error) {
	f.mu.Lock()
	c := f.contract
	f.mu.Unlock()
	if c != nil {
		return c, OutcomeOK, nil
	}
	var md oip.ModelMetadata
	err := f.retry(ctx, func() error {
		var err error
		md, err = f.cfg.Client.ModelMetadata(ctx, f.cfg.Endpoint.Model, "")
		return err
	})
	if err != nil {
		return nil, classify(err), f.errorf(err, "metadata: %s", forecast.ErrorMessage(err))
	}
	ct, err := oip.ContractOf(md)
	if err != nil {
		return nil, OutcomeBadResponse, f.errorf(err, "%s", forecast.ErrorMessage(err))
	}
	c = &validated{Contract: ct, versions: slices.Clone(md.Versions)}
	f.mu.Lock()
	f.contract = c
	f.mu.Unlock()
	return c, OutcomeOK, nil
}

func (f *Forecaster) invalidate() {
	f.mu.Lock()
	f.contract = nil
	f.mu.Unlock()
}

// retry calls call until it succeeds, fails with something other than
// "not ready", or the deadline leaves no room for the next pause; it
// returns call's last error, also when ctx ends during a pause. A retry
// that the deadline cuts short returns the "not ready" answer it retried:
// whether the last retry starts just in time to be answered or is cut
// short is a matter of timing (on a loaded machine it often is cut), and
// the upstream still not being ready is the news either way. The deadline
// cut it when ctx has ended or when the call failed with a deadline error:
// a gRPC server ends the call with DEADLINE_EXCEEDED at the deadline it
// was sent, and on a loaded machine that answer can come in before ctx's
// own timer has fired.
func (f *Forecaster) retry(ctx context.Context, call func() error) error {
	var last, notReady error
	p := retry.Policy{
		Base: f.cfg.Backoff, Cap: f.cfg.MaxBackoff, Rand: f.cfg.Rand,
		Retryable: NotReady,
		OnRetry:   func(int, time.Duration, error) { f.cfg.Metrics.retry(f.label) },
	}
	err := p.Do(ctx, func(context.Context) error {
		if last = call(); NotReady(last) {
			notReady = last
		}
		return last
	})
	switch {
	case err == nil:
		return nil
	case notReady != nil && (ctx.Err() != nil || errors.Is(last, context.DeadlineExceeded)):
		return notReady
	}
	return last
}

// NotReady reports whether err is an upstream's "not ready" answer: an
// EUNAVAILABLE error that says "not ready" (KServe 503 during a cold start,
// gRPC UNAVAILABLE from a model still loading). Unreachable servers are not
// "not ready": retrying them only spends the deadline.
func NotReady(err error) bool {
	return forecast.ErrorCode(err) == forecast.EUNAVAILABLE &&
		oip.NotReadyText(err.Error())
}

// classify turns an upstream error into an outcome label.
func classify(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	}
	switch forecast.ErrorCode(err) {
	case forecast.EUNAVAILABLE:
		return OutcomeUnavailable
	}
	return OutcomeError
}

// errorf returns an EUNAVAILABLE error naming the model, with cause err.
func (f *Forecaster) errorf(err error, format string, args ...any) error {
	what := "zone model"
	if f.cfg.Endpoint.Generic() {
		what = "generic model"
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE,
		Message: fmt.Sprintf("%s %s: %s", what, f.cfg.Endpoint.Model, fmt.Sprintf(format, args...)), Err: err}
}
