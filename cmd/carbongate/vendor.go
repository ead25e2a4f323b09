package main

import (
	"flag"
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
	"github.com/carbongate/carbongate/gateway/wiring"
)

// Vendor configures a vendor's own forecast: a step of the fallback chain
// (source vendor) and, with --store, a poller that stores its forecasts
// for carbonctl evaluate. The credentials are those of the pollers
// (--electricitymaps-token or $ELECTRICITYMAPS_TOKEN; --watttime-user or
// $WATTTIME_USERNAME, $WATTTIME_PASSWORD and --watttime-regions).
type Vendor struct {
	Name     string        // --vendor-forecast: electricitymaps or watttime; "" = none
	Position string        // --vendor-position
	Horizon  int           // --vendor-horizon: hours asked; 0 = the vendor's default
	MaxAge   time.Duration // --vendor-max-age
	Timeout  time.Duration // --vendor-timeout: one call to the vendor
	Rate     float64       // --vendor-rate: calls a second
	Burst    int           // --vendor-burst
	Store    string        // --vendor-store-zones: zones whose forecasts are stored
	Interval time.Duration // --vendor-store-interval

	forecaster *vendorfc.Forecaster
	poller     *vendorfc.StorePoller
}

func (v *Vendor) flags(fs *flag.FlagSet) {
	fs.StringVar(&v.Name, "vendor-forecast", v.Name, "a vendor's own forecast as a step of the fallback chain (source vendor): electricitymaps (lifecycle and direct; needs its token) or watttime (the marginal signal of the --watttime-regions zones; needs its credentials); absent: none")
	fs.StringVar(&v.Position, "vendor-position", string(wiring.VendorAfterGeneric), "where the vendor step goes in the chain: first, after-zone (after the zone models), after-generic (before the baseline) or last (after climatology)")
	fs.IntVar(&v.Horizon, "vendor-horizon", v.Horizon, "hours of forecast asked of the vendor (Electricity Maps 6 to 72, WattTime 1 to 72); 0: the vendor's default (24); hours past it repeat the vendor's last day")
	fs.DurationVar(&v.MaxAge, "vendor-max-age", vendorfc.DefaultMaxAge, "how long a vendor forecast is used before the vendor is asked again")
	fs.DurationVar(&v.Timeout, "vendor-timeout", vendorfc.DefaultTimeout, "bound of one call to the vendor")
	fs.Float64Var(&v.Rate, "vendor-rate", vendorfc.DefaultRate, "calls to the vendor a second at most, in bursts of --vendor-burst; beyond it the step fails at once and the chain moves on (the forecast is retried within a minute)")
	fs.IntVar(&v.Burst, "vendor-burst", vendorfc.DefaultBurst, "calls to the vendor at once at most (the warm-up at start asks for every zone with data)")
	fs.StringVar(&v.Store, "vendor-store-zones", v.Store, "zones whose vendor forecasts are stored in --store as model vendor:<vendor>, for carbonctl evaluate --store, e.g. DE,FR")
	fs.DurationVar(&v.Interval, "vendor-store-interval", vendorfc.DefaultStoreInterval, "pause between two rounds of storing vendor forecasts")
}

// check validates the flags that need no credentials.
func (v *Vendor) check() error {
	if _, err := wiring.ParseVendorPosition(v.Position); err != nil {
		return fmt.Errorf("--vendor-position: %s", forecast.ErrorMessage(err))
	}
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
func (v *Vendor) open(in *Ingest, reg prometheus.Registerer, log *slog.Logger) (*vendorfc.Forecaster, error) {
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
	v.forecaster = f
	return f, nil
}

// feeds returns the (zone, signal) pairs of --vendor-store-zones: every
// signal the vendor forecasts of each zone.
func (v *Vendor) feeds() ([]vendorfc.Feed, error) {
	zones, err := parseZoneList(v.Store)
	if err != nil {
		return nil, fmt.Errorf("--vendor-store-zones: %w", err)
	}
	var out []vendorfc.Feed
	for _, z := range slices.Compact(slices.Sorted(slices.Values(zones))) {
		n := len(out)
		for _, s := range v.forecaster.Signals() {
			if v.forecaster.Serves(z, s) {
				out = append(out, vendorfc.Feed{Zone: z, Signal: s})
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("--vendor-store-zones: %s does not forecast zone %s (WattTime: list it in --watttime-regions)", v.Name, z)
		}
	}
	return out, nil
}
