package runtime

import (
	"fmt"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway/casdk"
	"github.com/carbongate/carbongate/models/history"
)

// CASDK configures the Green Software Foundation Carbon Aware SDK's Web API
// (package gateway/casdk): served under Prefix (default /casdk) and, with
// Root, at the root too, so that SDK clients whose base URL cannot carry a
// path work unchanged.
type CASDK struct {
	Prefix string // --casdk-prefix; "": not under a prefix
	Root   bool   // --casdk-root
}

// casdkPart is the CASDK of a running carbongate.
type casdkPart struct {
	*CASDK
	prefixes []string
}

// check validates the parameters.
func (a *CASDK) check() error {
	if err := casdk.CheckPrefix(a.Prefix); err != nil {
		return fmt.Errorf("--casdk-prefix: %s", forecast.ErrorMessage(err))
	}
	return nil
}

// Prefixes returns the paths the API is served under: Prefix unless
// empty, and the root with Root.
func (a *CASDK) Prefixes() []string {
	var out []string
	if a.Prefix != "" {
		out = append(out, a.Prefix)
	}
	if a.Root {
		out = append(out, "")
	}
	return out
}

// mount adds the API's routes to next's and returns its OpenAPI fragment;
// nothing when it is off. Observed values come from the store when one is
// configured, else from tables (the bundled data or --data); batch
// forecasts from the store's forecasts; coordinates from the region table.
func (a *casdkPart) mount(m *Runtime, next func(*echo.Echo), tables *history.Tables, regs *regions.Table) (func(*echo.Echo), []byte, error) {
	if err := a.check(); err != nil {
		return next, nil, err
	}
	if a.prefixes = a.Prefixes(); len(a.prefixes) == 0 {
		return next, nil, nil
	}
	cfg := casdk.Config{Service: m.gw.Service, Observed: tables, ObservedSource: "bundled", Prefixes: a.prefixes, Logger: m.Logger,
		Coordinates: func(provider, region string) (float64, float64, bool) {
			r, _ := regs.Lookup(provider, region) // the region, also when it maps to no zone
			return r.Latitude, r.Longitude, r.HasGeo
		},
		Unserved: func(provider, region string) string { return unserved(regs, provider, region) }}
	if m.store.conn != nil {
		cfg.Observed, cfg.ObservedSource, cfg.Forecasts = m.store.conn, "store", m.store.conn
	}
	api, err := casdk.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	doc, err := casdk.OpenAPI(a.prefixes)
	if err != nil {
		return nil, nil, err
	}
	m.routes = append(m.routes, api.Routes()...)
	m.Logger.Info("Carbon Aware SDK Web API enabled", "prefixes", a.prefixes, "observed", cfg.ObservedSource, "batch_forecasts", cfg.Forecasts != nil)
	return func(e *echo.Echo) {
		if next != nil {
			next(e)
		}
		api.Register(e)
	}, doc, nil
}

// unserved says why a cloud region of the table is not served by the
// Carbon Aware SDK API (it maps to no zone, or to a zone the gateway has
// no data for), and "" for a region the table lacks.
func unserved(regs *regions.Table, provider, region string) string {
	r, err := regs.Lookup(provider, region)
	switch {
	case forecast.ErrorCode(err) == forecast.EINFEASIBLE:
		return forecast.ErrorMessage(err)
	case err != nil:
		return ""
	}
	return fmt.Sprintf("%s region %s (%s) is known and maps to zone %s, which has no data and no climatology", r.Provider, r.Region, r.Location, r.Zone)
}
