// Package fallback routes a forecast request for one zone through an ordered
// chain of forecasters — zone model, generic model, in-process baseline,
// climatology — and returns the first answer, with a Provenance saying which
// step answered and why the earlier ones did not.
package fallback

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/tracing"
)

// Step is one step of the chain.
type Step struct {
	// Source names the step in provenance and metrics.
	Source forecast.Source
	// Name names the step in reasons ("remote zone: circuit open"); default
	// Source. Several steps may share a Source (a remote and an in-process
	// zone model), not a Name.
	Name string
	// For returns the step's forecaster for zone and signal, or nil when the
	// step has none for them (the chain then moves on and says so).
	For func(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster
	// Timeout bounds the step; the step's deadline is the earlier of now +
	// Timeout and the caller's deadline. 0 means the caller's deadline only.
	Timeout time.Duration
}

// Config configures a Chain.
type Config struct {
	Steps []Step // best first; at least one
	// Known reports whether a zone can be forecast at all (it has history or
	// a climatology). Unknown zones are EINVALID naming "zones".
	Known func(zone forecast.Zone) bool
	// Registerer receives the chain's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Chain is a fallback chain. It is safe for concurrent use.
type Chain struct {
	steps    []Step
	known    func(forecast.Zone) bool
	answered *prometheus.CounterVec
	failed   *prometheus.CounterVec
}

// New validates cfg and returns a Chain.
func New(cfg Config) (*Chain, error) {
	if len(cfg.Steps) == 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "fallback: no steps")
	}
	steps := slices.Clone(cfg.Steps)
	names := make(map[string]bool, len(steps))
	for i, s := range steps {
		if s.Source == "" || s.For == nil || s.Timeout < 0 {
			return nil, forecast.Errorf(forecast.EINVALID, "fallback: step %d needs a source, a For function and a timeout ≥ 0", i)
		}
		if s.Name == "" {
			steps[i].Name = string(s.Source)
		}
		if names[steps[i].Name] || strings.Contains(steps[i].Name, ";") {
			return nil, forecast.Errorf(forecast.EINVALID, "fallback: step %d: name %q is taken or holds ';'", i, steps[i].Name)
		}
		names[steps[i].Name] = true
	}
	if cfg.Known == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "fallback: Known is required")
	}
	c := &Chain{
		steps: steps,
		known: cfg.Known,
		answered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_forecasts_total",
			Help: "Forecasts computed, by the fallback step that answered.",
		}, []string{"source"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_forecast_step_failures_total",
			Help: "Fallback steps that had a forecaster but failed or timed out, by step.",
		}, []string{"source"}),
	}
	if cfg.Registerer != nil {
		for _, col := range []prometheus.Collector{c.answered, c.failed} {
			if err := cfg.Registerer.Register(col); err != nil {
				return nil, fmt.Errorf("fallback: register metrics: %w", err)
			}
		}
	}
	return c, nil
}

var _ forecast.Forecaster = (*Chain)(nil)

// Known reports whether zone can be forecast.
func (c *Chain) Known(zone forecast.Zone) bool { return c.known(zone) }

// Forecast tries each step in order and returns the first valid forecast: one
// with req.Horizon finite values starting at req.Start. Its Provenance.Source
// is the step's, and Provenance.Reason lists why each earlier step did not
// answer ("zone: no model for DE; generic: timed out after 2s").
//
// Errors: EINVALID "zones" for an unknown zone or a bad request; the caller's
// context error when it ends; EINFEASIBLE "signal" when no step has a
// forecaster for the zone and signal; EUNAVAILABLE when every step that has
// one failed. A step
// that ignores its context is abandoned at its deadline (its result is
// dropped), so the chain never waits past a step's deadline. With tracing
// on, each step tried is a span ("fallback <step>") ending with its error.
func (c *Chain) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	if !c.known(req.Zone) {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.EINVALID, "zones", "unknown zone %s: no history and no climatology", req.Zone)
	}
	if req.Horizon < 1 || !req.Start.Equal(forecast.HourFloor(req.Start)) {
		return forecast.Forecast{}, forecast.Errorf(forecast.EINVALID, "forecast request needs a horizon ≥ 1 and an hour-aligned UTC start, got %d and %s", req.Horizon, req.Start)
	}
	var why, skipped []string
	tried := false
	for _, s := range c.steps {
		if err := ctx.Err(); err != nil {
			return forecast.Forecast{}, err
		}
		f := s.For(req.Zone, req.Signal)
		if f == nil {
			why, skipped = append(why, fmt.Sprintf("%s: no %s forecaster for %s", s.Name, s.Name, req.Zone)), append(skipped, s.Name)
			continue
		}
		tried = true
		fc, err := c.traced(ctx, s, f, req)
		if err != nil {
			if ctx.Err() != nil {
				return forecast.Forecast{}, ctx.Err()
			}
			c.failed.WithLabelValues(string(s.Source)).Inc()
			why, skipped = append(why, fmt.Sprintf("%s: %s", s.Name, describe(err, s.Timeout))), append(skipped, s.Name)
			continue
		}
		fc.Zone, fc.Signal = req.Zone, req.Signal
		fc.Provenance.Source = s.Source
		if fc.Provenance.IssuedAt.IsZero() {
			fc.Provenance.IssuedAt = req.Start
		}
		if len(why) > 0 {
			fc.Provenance.Reason, fc.Provenance.Skipped = strings.Join(why, "; "), skipped
		}
		c.answered.WithLabelValues(string(s.Source)).Inc()
		return fc, nil
	}
	if !tried {
		// Not an outage: no step forecasts this signal for the zone (a zone
		// known by its lifecycle climatology alone, asked for direct).
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "signal",
			"no %s forecast for %s: no step of the fallback chain forecasts it (%s)", req.Signal, req.Zone, strings.Join(why, "; "))
	}
	return forecast.Forecast{}, &forecast.Error{Code: forecast.EUNAVAILABLE,
		Message: fmt.Sprintf("no forecast for %s: %s", req.Zone, strings.Join(why, "; "))}
}

// Degraded reports whether fc should be recomputed: it came from another
// step than the first one that has a forecaster for its zone and signal
// now, either a later one (an earlier step failed, or had no forecaster
// then and has one now: a retry may do better) or an earlier one that has
// no forecaster any more (a remote model's route was withdrawn). The step
// that answered is the one after the steps in Provenance.Skipped; a
// forecast this chain did not make is judged by its Source alone.
func (c *Chain) Degraded(fc forecast.Forecast) bool {
	first, ok := c.first(fc.Zone, fc.Signal)
	if !ok {
		return false
	}
	i := len(fc.Provenance.Skipped)
	if i >= len(c.steps) || c.steps[i].Source != fc.Provenance.Source {
		return first.Source != fc.Provenance.Source
	}
	return c.steps[i].Name != first.Name
}

// FirstSource returns the first step that has a forecaster for zone and
// signal: the step that answers when nothing fails.
func (c *Chain) FirstSource(zone forecast.Zone, signal forecast.Signal) (forecast.Source, bool) {
	s, ok := c.first(zone, signal)
	return s.Source, ok
}

func (c *Chain) first(zone forecast.Zone, signal forecast.Signal) (Step, bool) {
	for _, s := range c.steps {
		if s.For(zone, signal) != nil {
			return s, true
		}
	}
	return Step{}, false
}

// errTimeout marks a step abandoned at its own deadline.
var errTimeout = errors.New("step deadline exceeded")

type result struct {
	fc  forecast.Forecast
	err error
}

// traced is try in a span of its own ("fallback <step>", with the zone,
// signal and the step's source) when tracing is on.
func (c *Chain) traced(ctx context.Context, s Step, f forecast.Forecaster, req forecast.Request) (forecast.Forecast, error) {
	ctx, span := tracing.Start(ctx, "fallback "+s.Name, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("carbongate.zone", string(req.Zone)),
			attribute.String("carbongate.signal", string(req.Signal)), attribute.String("carbongate.source", string(s.Source)))
	}
	fc, err := c.try(ctx, s, f, req)
	tracing.End(span, err)
	return fc, err
}

// try runs one step under its deadline and checks its answer.
func (c *Chain) try(ctx context.Context, s Step, f forecast.Forecaster, req forecast.Request) (forecast.Forecast, error) {
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if s.Timeout > 0 {
		sctx, cancel = context.WithTimeout(ctx, s.Timeout)
	}
	defer cancel()
	done := make(chan result, 1) // buffered: an abandoned step does not block
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("forecaster panicked: %v", p)}
			}
		}()
		fc, err := f.Forecast(sctx, req)
		done <- result{fc, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-sctx.Done():
		if ctx.Err() != nil {
			return forecast.Forecast{}, ctx.Err()
		}
		return forecast.Forecast{}, errTimeout
	}
	if r.err != nil {
		if sctx.Err() != nil && ctx.Err() == nil && errors.Is(r.err, context.DeadlineExceeded) {
			return forecast.Forecast{}, errTimeout
		}
		return forecast.Forecast{}, r.err
	}
	return r.fc, check(r.fc, req)
}

// check verifies that fc answers req.
func check(fc forecast.Forecast, req forecast.Request) error {
	s := fc.Series
	if !s.Start.Equal(req.Start) || len(s.Values) < req.Horizon {
		return forecast.Errorf(forecast.EINTERNAL, "answered %d hours from %s, want %d from %s", len(s.Values), s.Start.UTC().Format(time.RFC3339), req.Horizon, req.Start.Format(time.RFC3339))
	}
	for i, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return forecast.Errorf(forecast.EINTERNAL, "answered a non-finite or negative value at hour %d", i)
		}
	}
	return nil
}

// describe turns a step's error into a reason safe to show.
func describe(err error, timeout time.Duration) string {
	if errors.Is(err, errTimeout) {
		return fmt.Sprintf("timed out after %v", timeout)
	}
	var fe *forecast.Error
	if errors.As(err, &fe) {
		return fe.Code + ": " + forecast.ErrorMessage(err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline exceeded"
	}
	return "internal error" // the cause may hold details unsafe to show

}

// Flat is a Forecaster that answers every request with one constant value:
// the climatology step. Model names the provenance model.
type Flat struct {
	Model string
	// Value returns the zone's constant for signal and the version its
	// provenance carries (for climatology: the source, column and year of
	// the figure), or an error saying why there is none.
	Value func(zone forecast.Zone, signal forecast.Signal) (float64, string, error)
}

var _ forecast.Forecaster = Flat{}

// Forecast returns Horizon hours at the zone's constant value, or Value's
// error.
func (f Flat) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	v, version, err := f.Value(req.Zone, req.Signal)
	if err != nil {
		return forecast.Forecast{}, err
	}
	vals := make([]float64, req.Horizon)
	for i := range vals {
		vals[i] = v
	}
	return forecast.Forecast{
		Zone: req.Zone, Signal: req.Signal,
		Series:     forecast.Series{Start: req.Start, Values: vals},
		Provenance: forecast.Provenance{Model: f.Model, Version: version, IssuedAt: req.Start},
	}, nil
}
