package wiring

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/fallback"
	"github.com/carbongate/carbongate/gateway/remote"
)

// route reads cfg.Routes once and builds the router.
func (g *Gateway) route(ctx context.Context, cfg Config, hist forecast.History, log *slog.Logger) error {
	dial := cfg.Dial
	if dial == nil {
		dial = remote.Dial
	}
	metrics, err := remote.NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	g.Router, err = remote.NewRouter(remote.RouterConfig{
		Source: cfg.Routes, Dial: dial, History: hist, Signal: cfg.RemoteSignal,
		Timeout: cfg.UpstreamTimeout, Breaker: cfg.Breaker, Metrics: metrics,
		Refresh: cfg.RouteRefresh, Logger: log,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, routeTimeout)
	defer cancel()
	if err := g.Router.Refresh(ctx); err != nil {
		g.closeRouter()
		return fmt.Errorf("wiring: routes: %w", err)
	}
	eps := g.Router.Endpoints()
	labels := make([]string, len(eps))
	for i, e := range eps {
		labels[i] = remote.Label(e)
	}
	log.Info("remote models routed", "endpoints", len(eps), "routes", labels)
	return nil
}

// remoteSteps are the chain's first steps with routes: the zone's remote
// model, then the remote generic model. Both need the zone's history.
func (g *Gateway) remoteSteps(cfg Config) []fallback.Step {
	withData := func(pick func(forecast.Zone, forecast.Signal) forecast.Forecaster) func(forecast.Zone, forecast.Signal) forecast.Forecaster {
		return func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
			if _, ok := g.tables[z]; !ok {
				return nil
			}
			return pick(z, s)
		}
	}
	return []fallback.Step{
		{Source: forecast.SourceZone, Name: StepRemoteZone, Timeout: cfg.UpstreamTimeout, For: withData(g.Router.Zone)},
		{Source: forecast.SourceGeneric, Name: StepRemoteGeneric, Timeout: cfg.UpstreamTimeout,
			For: withData(func(_ forecast.Zone, s forecast.Signal) forecast.Forecaster { return g.Router.Generic(s) })},
	}
}

// Names of the remote steps in provenance reasons ("remote zone: timed
// out after 800ms"). The in-process steps are named by their source.
const (
	StepRemoteZone    = "remote zone"
	StepRemoteGeneric = "remote generic"
	// StepVendor starts the name of the vendor step: "vendor
	// electricitymaps".
	StepVendor = "vendor"
)

func (g *Gateway) closeRouter() {
	if g.Router != nil {
		g.Router.Close()
	}
}
