package vendors

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/electricitymaps"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/oip"
)

// ElectricityMaps is Electricity Maps: the average signals (lifecycle,
// direct) observed and forecast.
type ElectricityMaps struct {
	Zones   string // --ingest-zones: zones polled
	Signals string // --ingest-signals: the signals polled
	Token   string // --electricitymaps-token, default $ELECTRICITYMAPS_TOKEN
	URL     string // --electricitymaps-url
}

var _ Vendor = (*ElectricityMaps)(nil)

// Name is electricitymaps.
func (e *ElectricityMaps) Name() string { return electricitymaps.Name }

// Polls reports whether zones are to be polled.
func (e *ElectricityMaps) Polls() bool { return e.Zones != "" }

// FeedsForecast is false: its forecasts are asked for any zone.
func (e *ElectricityMaps) FeedsForecast() bool { return false }

// Feeds returns a feed per zone and signal.
func (e *ElectricityMaps) Feeds(answers *oip.BodyBudget, log *slog.Logger) ([]ingest.Feed, error) {
	if strings.TrimSpace(e.Token) == "" {
		return nil, fmt.Errorf("--ingest-zones needs an Electricity Maps token: set --electricitymaps-token or $ELECTRICITYMAPS_TOKEN")
	}
	c, err := electricitymaps.New(electricitymaps.Config{Token: e.Token, BaseURL: e.URL, AnswerBudget: answers, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--electricitymaps-url: %s", forecast.ErrorMessage(err))
	}
	zones, err := ParseZones(e.Zones)
	if err != nil {
		return nil, fmt.Errorf("--ingest-zones: %w", err)
	}
	var feeds []ingest.Feed
	for _, s := range strings.Split(e.Signals, ",") {
		sig, err := forecast.ParseSignal(s)
		if err != nil {
			return nil, fmt.Errorf("--ingest-signals: %s", forecast.ErrorMessage(err))
		}
		for _, z := range zones {
			feeds = append(feeds, ingest.Feed{Source: c, Zone: z, Signal: sig})
		}
	}
	return feeds, nil
}

// Forecasts returns the client of its forecasts.
func (e *ElectricityMaps) Forecasts(horizon int, timeout time.Duration, answers *oip.BodyBudget, log *slog.Logger) (vendorfc.Client, error) {
	if strings.TrimSpace(e.Token) == "" {
		return nil, fmt.Errorf("--vendor-forecast=electricitymaps needs an Electricity Maps token: set --electricitymaps-token or $ELECTRICITYMAPS_TOKEN")
	}
	if horizon != 0 && horizon < electricitymaps.MinHorizon {
		return nil, fmt.Errorf("--vendor-horizon %d: Electricity Maps forecasts %d to %d hours", horizon, electricitymaps.MinHorizon, electricitymaps.MaxHorizon)
	}
	c, err := electricitymaps.New(electricitymaps.Config{Token: e.Token, BaseURL: e.URL, Timeout: timeout, AnswerBudget: answers, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--electricitymaps-url: %s", forecast.ErrorMessage(err))
	}
	return vendorfc.ElectricityMaps{C: c, Horizon: horizon}, nil
}
