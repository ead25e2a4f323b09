// Package embedded assembles carbongate's embedded default: a gateway
// service over in-memory carbon-intensity tables, the cloud region table,
// trained model directories (optional), an in-process seasonal-naive
// baseline and climatology, behind the forecast cache. It needs no
// services.
package embedded

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/cache"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/fallback"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/baseline"
	"github.com/carbongate/carbongate/models/history"
	"github.com/carbongate/carbongate/models/workflow"
)

// Step timeouts by default.
const (
	DefaultModelTimeout    = 2 * time.Second
	DefaultBaselineTimeout = time.Second
	// BaselinePeriod is the season of the in-process baseline: yesterday's
	// hours repeated.
	BaselinePeriod = baseline.Daily
)

// Config configures the embedded gateway.
type Config struct {
	Tables    map[forecast.Zone]*dataset.Table // observed data; required
	Regions   *regions.Table                   // required
	ModelsDir string                           // trained models (workflow layout); "" = none
	Clock     clock.Clock                      // required
	Horizon   time.Duration                    // default gateway.DefaultHorizon
	Step      time.Duration                    // default search step; default gateway.DefaultStep

	ModelTimeout    time.Duration // zone and generic steps; default DefaultModelTimeout
	BaselineTimeout time.Duration // default DefaultBaselineTimeout

	// Forecasters, when set, replace the loaded models: the zone model of
	// (zone, signal) and the generic model of signal (zone ""). Tests use it
	// to inject slow or failing forecasters.
	Forecasters func(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster

	Registerer prometheus.Registerer // nil: no metrics registered
	Logger     *slog.Logger          // nil: discard
}

// Gateway is the assembled embedded gateway.
type Gateway struct {
	Service *gateway.Service
	Cache   *cache.Cache
	Chain   *fallback.Chain

	tables  map[forecast.Zone]*dataset.Table
	regions *regions.Table
	zone    map[modelKey]forecast.Forecaster
	generic map[forecast.Signal]forecast.Forecaster
}

type modelKey struct {
	zone   forecast.Zone
	signal forecast.Signal
}

// New loads the models of cfg.ModelsDir (a missing directory or a model
// that does not load is logged and skipped: that zone falls back) and
// assembles the gateway. Call Start to start the cache's refresh loop and
// Close to stop it.
func New(cfg Config) (*Gateway, error) {
	if cfg.Tables == nil || cfg.Regions == nil || cfg.Clock == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "embedded: Tables, Regions and Clock are required")
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
	hist := history.New(cfg.Tables)
	if cfg.ModelsDir != "" {
		g.load(cfg.ModelsDir, hist, log)
	}
	model := func(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster {
		if cfg.Forecasters != nil {
			return cfg.Forecasters(zone, signal)
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
	chain, err := fallback.New(fallback.Config{
		Steps: []fallback.Step{
			{Source: forecast.SourceZone, Timeout: cfg.ModelTimeout, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
				return model(z, s)
			}},
			{Source: forecast.SourceGeneric, Timeout: cfg.ModelTimeout, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
				if _, ok := cfg.Tables[z]; !ok {
					return nil // a generic model needs the zone's history
				}
				return model("", s)
			}},
			{Source: forecast.SourceBaseline, Timeout: cfg.BaselineTimeout, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
				if _, ok := cfg.Tables[z]; !ok {
					return nil
				}
				return base[s]
			}},
			{Source: forecast.SourceClimatology, For: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
				if _, ok := cfg.Regions.Climatology(z); !ok {
					return nil
				}
				return fallback.Flat{Model: "climatology", Value: func(z forecast.Zone, _ forecast.Signal) (float64, bool) {
					return cfg.Regions.Climatology(z)
				}}
			}},
		},
		Known:      g.known,
		Registerer: cfg.Registerer,
	})
	if err != nil {
		return nil, err
	}
	g.Chain = chain
	g.Cache, err = cache.New(cache.Config{
		Compute: func(ctx context.Context, k cache.Key, issue time.Time) (forecast.Forecast, error) {
			return chain.Forecast(ctx, forecast.Request{Zone: k.Zone, Signal: k.Signal, Start: issue, Horizon: hours})
		},
		Now:      cfg.Clock.Now,
		Logger:   log,
		Metrics:  cfg.Registerer,
		Degraded: chain.Degraded,
	})
	if err != nil {
		return nil, err
	}
	g.Service, err = gateway.New(gateway.Config{
		Forecasts: g.Cache,
		Known:     g.known,
		Locator:   locator{cfg.Regions},
		Catalog:   g.catalog,
		Clock:     cfg.Clock,
		Horizon:   cfg.Horizon,
		Step:      cfg.Step,
	})
	if err != nil {
		g.Cache.Close()
		return nil, err
	}
	return g, nil
}

// Start starts the cache's refresh loop.
func (g *Gateway) Start() { g.Cache.Start() }

// Close stops the cache and waits for its goroutines.
func (g *Gateway) Close() error { return g.Cache.Close() }

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

// DataZones returns the zones with observed data, sorted.
func (g *Gateway) DataZones() []forecast.Zone { return slices.Sorted(maps.Keys(g.tables)) }

// Models returns how many zone and generic models were loaded.
func (g *Gateway) Models() (zone, generic int) { return len(g.zone), len(g.generic) }

func (g *Gateway) known(z forecast.Zone) bool {
	if _, ok := g.tables[z]; ok {
		return true
	}
	_, ok := g.regions.Climatology(z)
	return ok
}

// catalog lists every known zone: those with data and those with a
// climatology.
func (g *Gateway) catalog() []gateway.ZoneInfo {
	locs := make(map[forecast.Zone][]gateway.Location)
	for _, r := range g.regions.All() {
		if r.Zone != "" {
			locs[r.Zone] = append(locs[r.Zone], gateway.Location{Provider: r.Provider, Region: r.Region})
		}
	}
	zones := make(map[forecast.Zone]bool)
	for z := range g.tables {
		zones[z] = true
	}
	for z := range locs {
		if _, ok := g.regions.Climatology(z); ok {
			zones[z] = true
		}
	}
	out := make([]gateway.ZoneInfo, 0, len(zones))
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		_, hasData := g.tables[z]
		clim, _ := g.regions.Climatology(z)
		zi := gateway.ZoneInfo{Zone: z, History: hasData, Climatology: clim, Locations: locs[z],
			Forecasters: make(map[forecast.Signal]forecast.Source, len(forecast.Signals))}
		for _, sig := range forecast.Signals {
			if src, ok := g.Chain.FirstSource(z, sig); ok {
				zi.Forecasters[sig] = src
			}
		}
		out = append(out, zi)
	}
	return out
}

// load reads DIR/<signal>/<ZONE>/ and DIR/<signal>/generic/.
func (g *Gateway) load(dir string, hist forecast.History, log *slog.Logger) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		log.Warn("models directory not found; serving with the baseline and climatology only", "models", dir)
		return
	}
	for _, sig := range forecast.Signals {
		sdir := filepath.Join(dir, string(sig))
		ents, err := os.ReadDir(sdir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				log.Warn("cannot read models", "dir", sdir, "error", err)
			}
			continue
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			mdir := filepath.Join(sdir, e.Name())
			m, err := artifact.Load(mdir)
			if err != nil {
				log.Warn("model not loaded; its zone falls back", "dir", mdir, "error", err)
				continue
			}
			meta := m.Meta()
			if meta.Signal != sig {
				log.Warn("model not loaded: it forecasts another signal", "dir", mdir, "signal", meta.Signal)
				continue
			}
			version := fingerprint(mdir)
			if e.Name() == workflow.GenericDir {
				if meta.Zone != "" {
					log.Warn("model not loaded: the generic directory holds a zone model", "dir", mdir, "zone", meta.Zone)
					continue
				}
				g.generic[sig] = models.NewForecaster(m, hist, version, forecast.SourceGeneric)
				continue
			}
			z, err := forecast.ParseZone(e.Name())
			if err != nil || meta.Zone != z {
				log.Warn("model not loaded: its zone does not match its directory", "dir", mdir, "zone", meta.Zone)
				continue
			}
			g.zone[modelKey{z, sig}] = models.NewForecaster(m, hist, version, forecast.SourceZone)
		}
	}
	log.Info("models loaded", "zone_models", len(g.zone), "generic_models", len(g.generic))
}

// fingerprint names a model directory's content: the first 12 hex digits
// of the SHA-256 of its MLmodel file (which holds the weights' digest).
func fingerprint(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, artifact.MLmodelFile))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// locator adapts the region table to gateway.Locator.
type locator struct{ t *regions.Table }

func (l locator) Locate(provider, region string) (forecast.Zone, error) {
	r, err := l.t.Lookup(provider, region)
	if err != nil {
		return "", err
	}
	return r.Zone, nil
}
