// Package wiring is the gateway's composition root: it assembles the
// scheduling service from a Config for every mode — the embedded default
// (in-memory carbon-intensity tables, the cloud region table, trained model
// directories, an in-process seasonal-naive baseline and climatology behind
// the forecast cache; no services) and production (the registry's champions,
// the observed-signals store as history, remote OIP models first in each
// zone's fallback chain with Config.Routes, the zone cap).
package wiring

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/cache"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/fallback"
	"github.com/carbongate/carbongate/gateway/guard"
	"github.com/carbongate/carbongate/gateway/remote"
	"github.com/carbongate/carbongate/gateway/remote/breaker"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/baseline"
	"github.com/carbongate/carbongate/models/history"
)

// Step timeouts by default.
const (
	DefaultModelTimeout    = 2 * time.Second
	DefaultBaselineTimeout = time.Second
	// DefaultUpstreamTimeout bounds each remote step (zone, generic model
	// over OIP), retries of a cold upstream included.
	DefaultUpstreamTimeout = 800 * time.Millisecond
	// DefaultVendorTimeout bounds the vendor step. It answers from its
	// cache mostly; a call to the vendor has its own bound
	// (vendorfc.Config.Timeout), so a slow vendor is abandoned here and
	// its answer cached for the next request.
	DefaultVendorTimeout = 2 * time.Second
	// BaselinePeriod is the season of the in-process baseline: yesterday's
	// hours repeated.
	BaselinePeriod = baseline.Daily
	// routeTimeout bounds New's first read of the routes (KServe discovery
	// lists InferenceServices) when the caller's context has no sooner
	// deadline.
	routeTimeout = 30 * time.Second
)

// Options are the settings of the gateway a user chooses (carbongate's
// flags map to them one to one); Config embeds them beside what the
// caller builds.
type Options struct {
	ModelsDir string        // trained models (workflow layout); "" = none
	Horizon   time.Duration // default gateway.DefaultHorizon
	Step      time.Duration // default search step; default gateway.DefaultStep

	RouteRefresh    time.Duration  // re-read of Config.Routes; default remote.DefaultRefresh
	UpstreamTimeout time.Duration  // each remote step; default DefaultUpstreamTimeout
	Breaker         breaker.Config // per endpoint: Failures, Cooldown (defaults in package breaker)
	VendorPosition  VendorPosition // of Config.Vendor; default VendorAfterGeneric
	// ZoneCap spreads bursts of decisions over zones (gateway/guard); the
	// zero value is off.
	ZoneCap guard.Config
}

// DefaultOptions returns the documented defaults of Options.
func DefaultOptions() Options {
	return Options{
		Horizon: gateway.DefaultHorizon, Step: gateway.DefaultStep,
		RouteRefresh: remote.DefaultRefresh, UpstreamTimeout: DefaultUpstreamTimeout,
		Breaker:        breaker.Config{Failures: breaker.DefaultFailures, Cooldown: breaker.DefaultCooldown},
		VendorPosition: VendorAfterGeneric,
	}
}

// Config configures the gateway.
type Config struct {
	Options
	Tables map[forecast.Zone]*dataset.Table // observed data; required
	// History, when set, is where models and the baseline read observed
	// history instead of Tables (production mode: the observed-signals
	// store). Tables still list the zones and give climatology.
	History forecast.History
	Regions *regions.Table // required
	Clock   clock.Clock    // required

	ModelTimeout    time.Duration // zone and generic steps; default DefaultModelTimeout
	BaselineTimeout time.Duration // default DefaultBaselineTimeout

	// Forecasters, when set, replace the loaded models: the zone model of
	// (zone, signal) and the generic model of signal (zone ""). Tests use it
	// to inject slow or failing forecasters.
	Forecasters func(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster

	// Registry, when set, serves in-process models ahead of those of
	// ModelsDir: the registry's promoted versions (gateway/live). After a
	// promotion call Gateway.Recompute so cached forecasts follow.
	Registry ModelSet

	// Routes lists the remote OIP model endpoints: a static route file
	// (route.File), KServe discovery, or anything else implementing
	// route.Source. nil: no remote steps. New reads it once (an error fails
	// New); Start re-reads it every RouteRefresh. With routes the chain is
	// remote zone → remote generic → zone → generic (in-process) →
	// baseline → climatology.
	Routes route.Source
	// Dial returns the client of an endpoint; nil: remote.Dial (oip/rest or
	// oip/grpc by protocol).
	Dial         remote.Dialer
	RemoteSignal forecast.Signal // the signal remote models forecast; default lifecycle
	// Vendor, when set, is a vendor's own forecast (gateway/vendorfc) as a
	// step of the chain, source vendor, at VendorPosition, bounded by
	// VendorTimeout. It is the only step for a signal no model forecasts
	// (WattTime's marginal signal).
	Vendor        VendorForecaster
	VendorTimeout time.Duration // default DefaultVendorTimeout
	// RetryInterval is how often a forecast served by a fallback step is
	// recomputed in the background, and the longest the cache's refresh
	// loop sleeps; default the cache's (1m).
	RetryInterval time.Duration

	Registerer prometheus.Registerer // nil: no metrics registered
	Logger     *slog.Logger          // nil: discard
}

// ModelSet is a set of in-process models that can change at any time;
// *live.Models implements it. nil results mean "none for this key".
type ModelSet interface {
	Zone(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster
	Generic(signal forecast.Signal) forecast.Forecaster
}

// Gateway is the assembled gateway.
type Gateway struct {
	Service *gateway.Service
	Cache   *cache.Cache
	Chain   *fallback.Chain
	Router  *remote.Router // nil without Routes

	tables  map[forecast.Zone]*dataset.Table
	regions *regions.Table
	zone    map[modelKey]forecast.Forecaster
	generic map[forecast.Signal]forecast.Forecaster
	vendor  VendorForecaster // nil without Config.Vendor
}

type modelKey struct {
	zone   forecast.Zone
	signal forecast.Signal
}

// New loads the models of cfg.ModelsDir (a missing directory or a model
// that does not load is logged and skipped: that zone falls back), reads
// cfg.Routes once within ctx, and assembles the gateway. Call Start to start
// the cache's refresh loop and Close to stop it.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	if cfg.Tables == nil || cfg.Regions == nil || cfg.Clock == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "wiring: Tables, Regions and Clock are required")
	}
	if cfg.Horizon == 0 {
		cfg.Horizon = gateway.DefaultHorizon
	}
	if cfg.ModelTimeout <= 0 {
		cfg.ModelTimeout = DefaultModelTimeout
	}
	if cfg.BaselineTimeout <= 0 {
		cfg.BaselineTimeout = DefaultBaselineTimeout
	}
	if cfg.UpstreamTimeout <= 0 {
		cfg.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if cfg.VendorTimeout <= 0 {
		cfg.VendorTimeout = DefaultVendorTimeout
	}
	vpos, err := ParseVendorPosition(string(cfg.VendorPosition))
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hours := int(cfg.Horizon / forecast.Hour)
	if hours < 1 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "horizon", "horizon must be at least 1h, got %v", cfg.Horizon)
	}
	g := &Gateway{tables: cfg.Tables, regions: cfg.Regions,
		zone: make(map[modelKey]forecast.Forecaster), generic: make(map[forecast.Signal]forecast.Forecaster)}
	var hist forecast.History = history.New(cfg.Tables)
	if cfg.History != nil {
		hist = cfg.History
	}
	if cfg.ModelsDir != "" {
		g.load(cfg.ModelsDir, hist, log)
	}
	model := func(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster {
		if cfg.Forecasters != nil {
			return cfg.Forecasters(zone, signal)
		}
		if cfg.Registry != nil {
			var f forecast.Forecaster
			if zone == "" {
				f = cfg.Registry.Generic(signal)
			} else {
				f = cfg.Registry.Zone(zone, signal)
			}
			if f != nil {
				return f
			}
		}
		if zone == "" {
			return g.generic[signal]
		}
		return g.zone[modelKey{zone, signal}]
	}
	base := make(map[forecast.Signal]forecast.Forecaster, len(forecast.Signals))
	for _, sig := range forecast.Signals {
		m, err := baseline.NewSeasonalNaive("", sig, BaselinePeriod, BaselinePeriod, hours)
		if err != nil {
			return nil, err
		}
		base[sig] = models.NewForecaster(m, hist, "", forecast.SourceBaseline)
	}
	var steps []fallback.Step
	if cfg.Routes != nil {
		if err := g.route(ctx, cfg, hist, log); err != nil {
			return nil, err
		}
		steps = g.remoteSteps(cfg)
	}
	steps = append(steps, []fallback.Step{
		{Source: forecast.SourceZone, Timeout: cfg.ModelTimeout, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
			return model(z, s)
		}},
		{Source: forecast.SourceGeneric, Timeout: cfg.ModelTimeout, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
			if !hasHistory(cfg, z) {
				return nil // a generic model needs the zone's history
			}
			return model("", s)
		}},
		{Source: forecast.SourceBaseline, Timeout: cfg.BaselineTimeout, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
			if !hasHistory(cfg, z) {
				return nil
			}
			return base[s]
		}},
		{Source: forecast.SourceClimatology, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
			if _, ok := cfg.Regions.ClimatologyOf(z, s); !ok {
				return nil // annual figures exist for the lifecycle signal only
			}
			return fallback.Flat{Model: "climatology", Value: climatology(cfg.Regions)}
		}},
	}...)
	if v := cfg.Vendor; v != nil {
		g.vendor = v
		steps = insertVendor(steps, fallback.Step{Source: forecast.SourceVendor, Name: StepVendor + " " + v.Vendor(), Timeout: cfg.VendorTimeout,
			For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
				if !v.Serves(z, s) {
					return nil
				}
				return v
			}}, vpos)
	}
	chain, err := fallback.New(fallback.Config{
		Steps:      steps,
		Known:      g.known,
		Registerer: cfg.Registerer,
	})
	if err != nil {
		g.closeRouter()
		return nil, err
	}
	g.Chain = chain
	g.Cache, err = cache.New(cache.Config{
		Compute: func(ctx context.Context, k cache.Key, issue time.Time) (forecast.Forecast, error) {
			return chain.Forecast(ctx, forecast.Request{Zone: k.Zone, Signal: k.Signal, Start: issue, Horizon: hours})
		},
		Now:           cfg.Clock.Now,
		Logger:        log,
		Metrics:       cfg.Registerer,
		Degraded:      g.degraded,
		RetryInterval: cfg.RetryInterval,
		// The refresh loop computes its sleep from the entries it knows;
		// waking every RetryInterval bounds how late a degraded entry
		// that appeared during a sleep is retried.
		Poll: cfg.RetryInterval,
	})
	if err != nil {
		g.closeRouter()
		return nil, err
	}
	g.Service, err = gateway.New(gateway.Config{
		Forecasts: g.Cache,
		Known:     g.known,
		Locator:   locator{cfg.Regions},
		Catalog:   g.catalog,
		Signals:   g.Signals(),
		Clock:     cfg.Clock,
		Horizon:   cfg.Horizon,
		Step:      cfg.Step,
		ZoneCap:   cfg.ZoneCap,
	})
	if err != nil {
		g.Cache.Close()
		g.closeRouter()
		return nil, err
	}
	return g, nil
}

// degraded reports whether a cached forecast should be recomputed before
// the hour turns: an earlier step failed (Chain.Degraded) or, with remote
// routes, a zone with data is not served by a zone model, since routes may
// appear at any refresh (the cache is not told when they do), unless the
// vendor step comes first and answered.
func (g *Gateway) degraded(fc forecast.Forecast) bool {
	if g.Chain.Degraded(fc) {
		return true
	}
	if g.Router == nil || fc.Provenance.Source == forecast.SourceZone {
		return false
	}
	if fc.Provenance.Source == forecast.SourceVendor && len(fc.Provenance.Skipped) == 0 {
		return false // the vendor comes first: a new route would not answer
	}
	_, ok := g.tables[fc.Zone]
	return ok
}

// Start starts the cache's refresh loop and, with routes, the route
// refresh loop.
func (g *Gateway) Start() {
	g.Cache.Start()
	if g.Router != nil {
		g.Router.Start()
	}
}

// Close stops the cache and waits for its goroutines, then closes the
// remote endpoints' clients.
func (g *Gateway) Close() error {
	err := g.Cache.Close()
	g.closeRouter()
	return err
}

// Warm computes the current forecasts of every zone with data, for both
// signals.
func (g *Gateway) Warm(ctx context.Context) error {
	var keys []cache.Key
	for _, sig := range forecast.Signals {
		for _, z := range slices.Sorted(maps.Keys(g.tables)) {
			keys = append(keys, cache.Key{Zone: z, Signal: sig})
		}
	}
	return g.Cache.Warm(ctx, keys)
}

// Recompute computes the current forecasts of zone (every zone with data
// when zone is "", as for the generic model) for signal again, in the
// background of requests, which keep the old forecasts until the new ones
// are in. Call it after a model changed.
func (g *Gateway) Recompute(ctx context.Context, zone forecast.Zone, signal forecast.Signal) error {
	var keys []cache.Key
	if zone != "" {
		keys = []cache.Key{{Zone: zone, Signal: signal}}
	} else {
		for _, z := range g.DataZones() {
			keys = append(keys, cache.Key{Zone: z, Signal: signal})
		}
	}
	return g.Cache.Recompute(ctx, keys)
}

// Signals returns the signals the gateway may forecast: the average ones
// and, with a vendor that forecasts it (WattTime), the marginal one.
func (g *Gateway) Signals() []forecast.Signal {
	out := forecast.Signals[:]
	if g.vendor != nil && slices.Contains(g.vendor.Signals(), forecast.SignalMarginal) {
		out = append(slices.Clone(out), forecast.SignalMarginal)
	}
	return out
}

// DataZones returns the zones with observed data, sorted.
func (g *Gateway) DataZones() []forecast.Zone { return slices.Sorted(maps.Keys(g.tables)) }

// Models returns how many zone and generic models were loaded.
func (g *Gateway) Models() (zone, generic int) { return len(g.zone), len(g.generic) }

// NewBundled is New with the bundled data, the default cloud region table
// and a replay clock at 2021-06-01T00:00:00Z (the carbongate default; the
// bundled data covers the year before it) filled in where cfg leaves them unset.
// With cfg.Routes = route.Static(endpoints) it builds a gateway over a
// list of remote models in one call (end-to-end and load tests).
func NewBundled(ctx context.Context, cfg Config) (*Gateway, error) {
	if cfg.Tables == nil {
		t, err := bundled.Load()
		if err != nil {
			return nil, err
		}
		cfg.Tables = t
	}
	if cfg.Regions == nil {
		r, err := regions.Default()
		if err != nil {
			return nil, err
		}
		cfg.Regions = r
	}
	if cfg.Clock == nil {
		c, err := clock.Parse(clock.ModeReplay, time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			return nil, err
		}
		cfg.Clock = c
	}
	return New(ctx, cfg)
}

// hasHistory reports whether zone z may have observed history: always with
// a History (it answers per call), otherwise when Tables hold the zone.
func hasHistory(cfg Config, z forecast.Zone) bool {
	if cfg.History != nil {
		return true
	}
	_, ok := cfg.Tables[z]
	return ok
}
