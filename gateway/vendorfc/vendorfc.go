// Package vendorfc makes a vendor's own forecast (Electricity Maps,
// WattTime) usable by carbongate: Forecaster is a step of the fallback
// chain (source vendor) and StorePoller writes the vendor's forecasts into
// the forecast store under the model name "vendor:<vendor>", so that
// carbonctl evaluate scores them beside carbongate's models.
//
// Both go through one Forecaster, which keeps the latest forecast of each
// (zone, signal) for MaxAge, asks the vendor at most Rate times a second
// (beyond it a step fails at once instead of waiting), bounds every call
// by Timeout and, after a failure, does not ask again for Backoff (or the
// Retry-After the vendor sent, up to MaxBackoff; MaxBackoff after a
// failure that is not passing): a failing vendor costs
// the chain no time and the vendor no requests.
package vendorfc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/electricitymaps"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
)

// ModelPrefix starts the model name of a vendor's forecasts in provenance
// and in the forecast store: "vendor:electricitymaps".
const ModelPrefix = "vendor:"

// ModelName returns the model name of vendor's forecasts.
func ModelName(vendor string) string { return ModelPrefix + vendor }

// Issue is one forecast a vendor issued for a zone's signal, in hours.
type Issue struct {
	Vendor string
	Zone   forecast.Zone
	Signal forecast.Signal
	// Model is what the vendor says of its model (WattTime: the model
	// date); "" when it says nothing.
	Model string
	// Start is the first forecast hour (UTC, on the hour); Values[i] is
	// the mean intensity in gCO2(eq)/kWh over hour Start+i.
	Start  time.Time
	Values []float64
	// MadeAt is when the vendor made the forecast (Electricity Maps'
	// updatedAt, WattTime's generated_at); zero when it does not say.
	MadeAt time.Time
}

// Client fetches a vendor's latest forecast. Implementations are safe for
// concurrent use.
type Client interface {
	// Name names the vendor: electricitymaps or watttime.
	Name() string
	// Serves reports whether the vendor forecasts zone's signal.
	Serves(zone forecast.Zone, signal forecast.Signal) bool
	// Signals lists the signals it forecasts (of some zones).
	Signals() []forecast.Signal
	// Forecast returns the latest forecast of zone's signal. Errors are
	// those of the ingest clients (*forecast.Error: EUNAVAILABLE for 429,
	// 5xx and timeouts, with ingest.RetryAfter; EINVALID for an answer
	// that cannot be read; ENOTFOUND; EUNAUTHORIZED).
	Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (Issue, error)
}

// hours turns a vendor's points into whole hours: the hours the points
// cover completely (ingest.Hourly), up to the first hour missing.
func hours(b ingest.Batch) (time.Time, []float64, error) {
	if b.Period <= 0 || b.Period > forecast.Hour || forecast.Hour%b.Period != 0 {
		return time.Time{}, nil, forecast.Errorf(forecast.EINVALID, "forecast points cover %v each; want a divisor of an hour", b.Period)
	}
	hs := ingest.Hourly(b.Points, b.Period)
	if len(hs) == 0 {
		return time.Time{}, nil, forecast.Errorf(forecast.EUNAVAILABLE, "the forecast covers no whole hour")
	}
	start := hs[0].Time.UTC()
	vals := make([]float64, 0, len(hs))
	for i, h := range hs {
		if !h.Time.Equal(start.Add(time.Duration(i) * forecast.Hour)) {
			break
		}
		vals = append(vals, h.Value)
	}
	return start, vals, nil
}

// ElectricityMaps is the Client of Electricity Maps' forecast endpoint, for
// the lifecycle and direct signals of every zone.
type ElectricityMaps struct {
	C *electricitymaps.Client
	// Horizon is the horizonHours asked for (electricitymaps.MinHorizon
	// to MaxHorizon); 0 lets the API choose (24 h).
	Horizon int
}

// Name implements Client.
func (ElectricityMaps) Name() string { return electricitymaps.Name }

// Serves implements Client.
func (ElectricityMaps) Serves(_ forecast.Zone, signal forecast.Signal) bool {
	return signal == forecast.SignalLifecycle || signal == forecast.SignalDirect
}

// Signals implements Client.
func (ElectricityMaps) Signals() []forecast.Signal { return forecast.Signals[:] }

// Forecast implements Client.
func (e ElectricityMaps) Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (Issue, error) {
	f, err := e.C.Forecast(ctx, zone, signal, e.Horizon)
	if err != nil {
		return Issue{}, err
	}
	start, vals, err := hours(f.Batch)
	if err != nil {
		return Issue{}, fmt.Errorf("electricitymaps: %w", err)
	}
	return Issue{Vendor: electricitymaps.Name, Zone: zone, Signal: signal, Start: start, Values: vals, MadeAt: f.UpdatedAt}, nil
}

// WattTime is the Client of WattTime's forecast endpoint, for the marginal
// signal (ingest.SignalMarginal) of the zones of Regions.
type WattTime struct {
	C       *watttime.Client
	Regions map[forecast.Zone]string // zone → WattTime region
	// Horizon is the horizon_hours asked for (1 to watttime.MaxHorizon);
	// 0 lets the API choose (24 h).
	Horizon int
}

// Name implements Client.
func (WattTime) Name() string { return watttime.Name }

// Serves implements Client.
func (w WattTime) Serves(zone forecast.Zone, signal forecast.Signal) bool {
	_, ok := w.Regions[zone]
	return ok && signal == ingest.SignalMarginal
}

// Signals implements Client.
func (WattTime) Signals() []forecast.Signal { return []forecast.Signal{ingest.SignalMarginal} }

// Forecast implements Client; the values are in gCO2/kWh (the client
// converts WattTime's lbs/MWh) averaged over whole hours.
func (w WattTime) Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (Issue, error) {
	region, ok := w.Regions[zone]
	if !ok || signal != ingest.SignalMarginal {
		return Issue{}, forecast.FieldErrorf(forecast.ENOTFOUND, "signal", "watttime forecasts the marginal signal of the configured zones, not %s of %s", signal, zone)
	}
	d, err := w.C.Forecast(ctx, region, w.Horizon)
	if err != nil {
		return Issue{}, err
	}
	start, vals, err := hours(d.Batch)
	if err != nil {
		return Issue{}, fmt.Errorf("watttime: %w", err)
	}
	return Issue{Vendor: watttime.Name, Zone: zone, Signal: signal, Model: d.Model, Start: start, Values: vals, MadeAt: d.GeneratedAt}, nil
}

// Defaults of Config.
const (
	DefaultMaxAge     = 30 * time.Minute
	DefaultTimeout    = 5 * time.Second
	DefaultRate       = 1.0 // calls a second
	DefaultBurst      = 5
	DefaultBackoff    = time.Minute
	DefaultMaxBackoff = 15 * time.Minute
	// MaxLead is how far the vendor's first forecast hour may lie after
	// the requested start: the hour in between (the current one, which
	// Electricity Maps no longer forecasts) takes the first hour's value.
	MaxLead = forecast.Hour
)

// Config configures a Forecaster. Zero durations and rates take the
// defaults above.
type Config struct {
	Client Client // required
	// MaxAge is how long a fetched forecast is used before the vendor is
	// asked again.
	MaxAge time.Duration
	// Timeout bounds one call to the vendor (a login included), on top
	// of the caller's deadline.
	Timeout time.Duration
	// Rate and Burst bound the calls to the vendor (a token bucket);
	// a request beyond them fails at once with EUNAVAILABLE.
	Rate  float64
	Burst int
	// Backoff is how long a (zone, signal) is not asked again after a
	// failure; a Retry-After of the vendor replaces it, up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	Now                 func() time.Time      // nil: time.Now
	Logger              *slog.Logger          // nil: discard
	Registerer          prometheus.Registerer // the metrics below; nil: none registered
}

// Forecaster is a forecast.Forecaster over a vendor's forecasts: the step
// of the fallback chain labelled source vendor. Safe for concurrent use.
type Forecaster struct {
	cfg  Config
	lim  *rate.Limiter
	log  *slog.Logger
	name string

	lookups  *prometheus.CounterVec // by vendor and result
	requests *prometheus.CounterVec // by vendor and code

	mu      sync.Mutex
	entries map[key]*entry
}

// Results of a lookup (Current) in carbongate_vendor_forecast_lookups_total.
const (
	ResultCached      = "cached"       // a forecast fetched less than MaxAge ago
	ResultFetched     = "fetched"      // a call that succeeded
	ResultFailed      = "failed"       // a call that failed
	ResultHeld        = "held"         // no call: a recent failure holds
	ResultRateLimited = "rate_limited" // no call: the rate limit is spent
)

type key struct {
	zone   forecast.Zone
	signal forecast.Signal
}

// entry is the state of one (zone, signal): the last forecast fetched and
// the last failure. mu serialises fetches, so concurrent requests make one
// call.
type entry struct {
	mu      sync.Mutex
	issue   Issue
	fetched time.Time // of issue; zero before the first success
	err     error     // the last failure, while now < retryAt
	retryAt time.Time
}

// New validates cfg and returns a Forecaster; it makes no call.
func New(cfg Config) (*Forecaster, error) {
	if cfg.Client == nil || cfg.Client.Name() == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "client", "vendorfc: a named Client is required")
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.MaxAge, DefaultMaxAge}, {&cfg.Timeout, DefaultTimeout}, {&cfg.Backoff, DefaultBackoff}, {&cfg.MaxBackoff, DefaultMaxBackoff}} {
		if *d.v < 0 {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "duration", "vendorfc: durations must be ≥ 0")
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Rate < 0 || math.IsInf(cfg.Rate, 0) || math.IsNaN(cfg.Rate) || cfg.Burst < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "rate", "vendorfc: rate and burst must be ≥ 0")
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.Backoff)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Forecaster{cfg: cfg, lim: rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst), log: cfg.Logger,
		name: cfg.Client.Name(), entries: map[key]*entry{},
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_vendor_forecast_lookups_total",
			Help: "Lookups of a vendor's forecast (the fallback step and the store poller), by vendor and result: cached, fetched, failed, held (a recent failure), rate_limited.",
		}, []string{"vendor", "result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_vendor_requests_total",
			Help: "Calls to a vendor's forecast API, by vendor and outcome (ok or the error code).",
		}, []string{"vendor", "code"}),
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{f.lookups, f.requests} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("vendorfc: register metrics: %w", err)
			}
		}
	}
	return f, nil
}

// Vendor names the vendor.
func (f *Forecaster) Vendor() string { return f.name }

// Serves reports whether the vendor forecasts zone's signal: the fallback
// step has a forecaster for it.
func (f *Forecaster) Serves(zone forecast.Zone, signal forecast.Signal) bool {
	return f.cfg.Client.Serves(zone, signal)
}

// Signals lists the signals the vendor forecasts.
func (f *Forecaster) Signals() []forecast.Signal { return f.cfg.Client.Signals() }

var _ forecast.Forecaster = (*Forecaster)(nil)

// Forecast answers req from the vendor's latest forecast of its zone and
// signal: req.Horizon hours from req.Start. The vendor's first hour may lie
// up to MaxLead after req.Start (the hours before take its value); hours
// past the vendor's horizon repeat its last 24 hours (its last value when
// it covers less than a day), as the seasonal-naive baseline does.
// Provenance: Model "vendor:<vendor>", Version the vendor's model (or
// when it made the forecast), IssuedAt req.Start, Vendor the vendor.
//
// Errors: ENOTFOUND when the vendor does not forecast the zone's signal;
// EUNAVAILABLE when the vendor fails (also while a recent failure is held
// for Backoff), when the rate limit is spent, or when its forecast does
// not cover req.Start (a replay clock asks for past hours); the vendor's
// other errors as they come.
func (f *Forecaster) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	if req.Horizon < 1 {
		return forecast.Forecast{}, forecast.FieldErrorf(forecast.EINVALID, "horizon", "vendorfc: horizon %d < 1", req.Horizon)
	}
	is, err := f.Current(ctx, req.Zone, req.Signal)
	if err != nil {
		return forecast.Forecast{}, err
	}
	vals, err := extend(is, req.Start, req.Horizon)
	if err != nil {
		return forecast.Forecast{}, err
	}
	version := is.Model
	if version == "" && !is.MadeAt.IsZero() {
		version = is.MadeAt.UTC().Format(time.RFC3339)
	}
	return forecast.Forecast{
		Zone: req.Zone, Signal: req.Signal,
		Series: forecast.Series{Start: req.Start, Values: vals},
		Provenance: forecast.Provenance{Model: ModelName(is.Vendor), Version: version, Source: forecast.SourceVendor,
			IssuedAt: req.Start, Vendor: is.Vendor},
	}, nil
}

// extend returns horizon hours from start out of is (see Forecast).
func extend(is Issue, start time.Time, horizon int) ([]float64, error) {
	start = start.UTC()
	lead := is.Start.Sub(start)
	end := is.Start.Add(time.Duration(len(is.Values)) * forecast.Hour)
	if lead > MaxLead || !start.Before(end) {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "%s's forecast covers %s to %s, not %s",
			is.Vendor, is.Start.Format(time.RFC3339), end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	vals := make([]float64, horizon)
	n := len(is.Values)
	for i := range vals {
		j := int(start.Add(time.Duration(i)*forecast.Hour).Sub(is.Start) / forecast.Hour)
		switch {
		case j < 0:
			j = 0
		case j >= n && n >= forecast.HoursPerDay:
			j = n - forecast.HoursPerDay + (j-n)%forecast.HoursPerDay
		case j >= n:
			j = n - 1
		}
		vals[i] = is.Values[j]
	}
	return vals, nil
}

// Current returns the vendor's latest forecast of zone's signal: the one
// fetched less than MaxAge ago, or a new one (one call, however many
// callers wait for it). The call is bounded by Timeout, not by ctx: a
// caller that gives up earlier leaves it running, and its answer is kept.
// Errors as Forecast's.
func (f *Forecaster) Current(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (Issue, error) {
	if !f.cfg.Client.Serves(zone, signal) {
		return Issue{}, forecast.FieldErrorf(forecast.ENOTFOUND, "signal", "%s does not forecast %s of %s", f.name, signal, zone)
	}
	e := f.entry(zone, signal)
	e.mu.Lock()
	defer e.mu.Unlock()
	now := f.cfg.Now()
	if !e.fetched.IsZero() && now.Sub(e.fetched) < f.cfg.MaxAge {
		f.lookups.WithLabelValues(f.name, ResultCached).Inc()
		return e.issue, nil
	}
	if e.err != nil && now.Before(e.retryAt) {
		f.lookups.WithLabelValues(f.name, ResultHeld).Inc()
		return Issue{}, &forecast.Error{Code: forecast.EUNAVAILABLE,
			Message: fmt.Sprintf("%s; %s is not asked again before %s", forecast.ErrorMessage(e.err), f.name, e.retryAt.UTC().Format(time.RFC3339))}
	}
	if !f.lim.AllowN(now, 1) {
		f.lookups.WithLabelValues(f.name, ResultRateLimited).Inc()
		return Issue{}, forecast.Errorf(forecast.EUNAVAILABLE, "%s: the call rate limit (%v a second) is spent", f.name, f.cfg.Rate)
	}
	// The call outlives a caller that gives up (a fallback step at its
	// deadline): its answer is kept for the next request.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
	is, err := f.cfg.Client.Forecast(cctx, zone, signal)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && cctx.Err() != nil {
			err = &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("%s: no answer within %v", f.name, f.cfg.Timeout), Err: err}
		}
		e.err, e.retryAt = err, now.Add(f.backoff(err))
		f.lookups.WithLabelValues(f.name, ResultFailed).Inc()
		f.requests.WithLabelValues(f.name, forecast.ErrorCode(err)).Inc()
		f.log.LogAttrs(ctx, slog.LevelWarn, "vendorfc: vendor forecast failed", slog.String("vendor", f.name),
			slog.String("zone", string(zone)), slog.String("signal", string(signal)), slog.String("code", forecast.ErrorCode(err)),
			slog.String("error", forecast.ErrorMessage(err)), slog.Time("retry_at", e.retryAt))
		return Issue{}, err
	}
	e.issue, e.fetched, e.err = is, now, nil
	f.lookups.WithLabelValues(f.name, ResultFetched).Inc()
	f.requests.WithLabelValues(f.name, "ok").Inc()
	f.log.LogAttrs(ctx, slog.LevelDebug, "vendorfc: vendor forecast fetched", slog.String("vendor", f.name),
		slog.String("zone", string(zone)), slog.String("signal", string(signal)), slog.Time("start", is.Start), slog.Int("hours", len(is.Values)))
	return is, nil
}

// backoff is how long a failure holds: for a passing failure
// (EUNAVAILABLE) the vendor's Retry-After or Backoff, at most MaxBackoff;
// MaxBackoff for the others (credentials refused, an unknown zone, an
// answer that cannot be read), which asking again soon will not mend.
func (f *Forecaster) backoff(err error) time.Duration {
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		return f.cfg.MaxBackoff
	}
	if ra, ok := ingest.RetryAfter(err); ok {
		return min(max(ra, f.cfg.Backoff), f.cfg.MaxBackoff)
	}
	return f.cfg.Backoff
}

func (f *Forecaster) entry(zone forecast.Zone, signal forecast.Signal) *entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key{zone, signal}
	e := f.entries[k]
	if e == nil {
		e = &entry{}
		f.entries[k] = e
	}
	return e
}
