package runtime

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest/electricitymaps"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
	"github.com/carbongate/carbongate/gateway/vendorfc"
)

// Vendor configures a vendor's own forecast: a step of the fallback chain
// (source vendor) and, with --store, a poller that stores its forecasts
// for carbonctl evaluate. The credentials are those of the pollers
// (--electricitymaps-token or $ELECTRICITYMAPS_TOKEN; --watttime-user or
// $WATTTIME_USERNAME, $WATTTIME_PASSWORD and --watttime-regions).
type Vendor struct {
	Name     string        // --vendor-forecast: electricitymaps or watttime; "" = none
	Horizon  int           // --vendor-horizon: hours asked; 0 = the vendor's default
	MaxAge   time.Duration // --vendor-max-age
	Timeout  time.Duration // --vendor-timeout: one call to the vendor
	Rate     float64       // --vendor-rate: calls a second
	Burst    int           // --vendor-burst
	Store    string        // --vendor-store-zones: zones whose forecasts are stored
	Interval time.Duration // --vendor-store-interval
}

// check validates the flags that need no credentials.
func (v *Vendor) check() error {
	switch {
	case v.Name == "" && v.Store != "":
		return fmt.Errorf("--vendor-store-zones needs --vendor-forecast")
	case v.Name != "" && v.Name != electricitymaps.Name && v.Name != watttime.Name:
		return fmt.Errorf("--vendor-forecast %q is not one of electricitymaps, watttime", v.Name)
	case v.Horizon < 0 || v.Horizon > 72:
		return fmt.Errorf("--vendor-horizon %d is not between 0 and 72", v.Horizon)
	case v.MaxAge <= 0 || v.Timeout <= 0 || v.Interval <= 0 || !(v.Rate > 0) || v.Burst < 1:
		return fmt.Errorf("--vendor-max-age, --vendor-timeout, --vendor-rate, --vendor-burst and --vendor-store-interval must be positive")
	}
	return nil
}

// open builds the vendor's forecaster from the pollers' credentials; nil
// without --vendor-forecast.
func (v *Vendor) open(in *ingestPart, reg prometheus.Registerer, log *slog.Logger) (*vendorfc.Forecaster, error) {
	if v.Name == "" {
		return nil, nil
	}
	var client vendorfc.Client
	switch v.Name {
	case electricitymaps.Name:
		if strings.TrimSpace(in.EMToken) == "" {
			return nil, fmt.Errorf("--vendor-forecast=electricitymaps needs an Electricity Maps token: set --electricitymaps-token or $ELECTRICITYMAPS_TOKEN")
		}
		if v.Horizon != 0 && v.Horizon < electricitymaps.MinHorizon {
			return nil, fmt.Errorf("--vendor-horizon %d: Electricity Maps forecasts %d to %d hours", v.Horizon, electricitymaps.MinHorizon, electricitymaps.MaxHorizon)
		}
		c, err := electricitymaps.New(electricitymaps.Config{Token: in.EMToken, BaseURL: in.EMURL, Timeout: v.Timeout,
			AnswerBudget: in.answerBudget(), Logger: log})
		if err != nil {
			return nil, fmt.Errorf("--electricitymaps-url: %s", forecast.ErrorMessage(err))
		}
		client = vendorfc.ElectricityMaps{C: c, Horizon: v.Horizon}
	case watttime.Name:
		if in.WTRegions == "" {
			return nil, fmt.Errorf("--vendor-forecast=watttime needs --watttime-regions (the zones whose marginal signal it forecasts)")
		}
		c, regions, err := in.wtClient(log)
		if err != nil {
			return nil, err
		}
		client = vendorfc.WattTime{C: c, Regions: regions, Horizon: v.Horizon}
	}
	f, err := vendorfc.New(vendorfc.Config{Client: client, MaxAge: v.MaxAge, Timeout: v.Timeout, Rate: v.Rate, Burst: v.Burst,
		Registerer: reg, Logger: log.With("component", "vendor")})
	if err != nil {
		return nil, fmt.Errorf("--vendor-*: %s", forecast.ErrorMessage(err))
	}
	return f, nil
}

// feeds returns the (zone, signal) pairs of --vendor-store-zones: every
// signal the vendor forecasts of each zone.
func (v *Vendor) feeds(f *vendorfc.Forecaster) ([]vendorfc.Feed, error) {
	zones, err := parseZoneList(v.Store)
	if err != nil {
		return nil, fmt.Errorf("--vendor-store-zones: %w", err)
	}
	var out []vendorfc.Feed
	for _, z := range slices.Compact(slices.Sorted(slices.Values(zones))) {
		n := len(out)
		for _, s := range f.Signals() {
			if f.Serves(z, s) {
				out = append(out, vendorfc.Feed{Zone: z, Signal: s})
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("--vendor-store-zones: %s does not forecast zone %s (WattTime: list it in --watttime-regions)", v.Name, z)
		}
	}
	return out, nil
}
