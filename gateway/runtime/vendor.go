package runtime

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/gateway/vendors"
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
	vendor, err := vendors.Find(in.Vendors(), v.Name)
	if err != nil {
		return nil, err
	}
	client, err := vendor.Forecasts(v.Horizon, v.Timeout, in.answerBudget(), log)
	if err != nil {
		return nil, err
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
	zones, err := vendors.ParseZones(v.Store)
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
