package vendors

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/oip"
)

// WattTime is WattTime: the marginal signal of the zones its regions map,
// observed and forecast.
type WattTime struct {
	User     string // --watttime-user, default $WATTTIME_USERNAME
	Password string // $WATTTIME_PASSWORD only
	Regions  string // --watttime-regions ZONE=REGION,…
	URL      string // --watttime-url
}

var _ Vendor = (*WattTime)(nil)

// Name is watttime.
func (w *WattTime) Name() string { return watttime.Name }

// Polls reports whether regions are given.
func (w *WattTime) Polls() bool { return w.Regions != "" }

// FeedsForecast is true: its regions are also the zones it forecasts.
func (w *WattTime) FeedsForecast() bool { return true }

// Feeds returns a marginal feed per zone of the regions.
func (w *WattTime) Feeds(answers *oip.BodyBudget, log *slog.Logger) ([]ingest.Feed, error) {
	c, regions, err := w.client(answers, log)
	if err != nil {
		return nil, err
	}
	feeds := make([]ingest.Feed, 0, len(regions))
	for _, z := range slices.Sorted(maps.Keys(regions)) {
		feeds = append(feeds, ingest.Feed{Source: c, Zone: z, Signal: ingest.SignalMarginal})
	}
	return feeds, nil
}

// Forecasts returns the client of its forecasts of the regions' zones.
func (w *WattTime) Forecasts(horizon int, _ time.Duration, answers *oip.BodyBudget, log *slog.Logger) (vendorfc.Client, error) {
	if w.Regions == "" {
		return nil, fmt.Errorf("--vendor-forecast=watttime needs --watttime-regions (the zones whose marginal signal it forecasts)")
	}
	c, regions, err := w.client(answers, log)
	if err != nil {
		return nil, err
	}
	return vendorfc.WattTime{C: c, Regions: regions, Horizon: horizon}, nil
}

// client returns the client of the credentials and regions, and the
// regions by zone.
func (w *WattTime) client(answers *oip.BodyBudget, log *slog.Logger) (*watttime.Client, map[forecast.Zone]string, error) {
	if w.User == "" || w.Password == "" {
		return nil, nil, fmt.Errorf("--watttime-regions needs WattTime credentials: --watttime-user (or $WATTTIME_USERNAME) and $WATTTIME_PASSWORD")
	}
	regions := map[forecast.Zone]string{}
	for _, pair := range strings.Split(w.Regions, ",") {
		z, r, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || r == "" {
			return nil, nil, fmt.Errorf("--watttime-regions: %q is not ZONE=REGION", pair)
		}
		zone, err := forecast.ParseZone(z)
		if err != nil {
			return nil, nil, fmt.Errorf("--watttime-regions: %s", forecast.ErrorMessage(err))
		}
		if _, dup := regions[zone]; dup {
			return nil, nil, fmt.Errorf("--watttime-regions: zone %s is listed twice", zone)
		}
		regions[zone] = r
	}
	c, err := watttime.New(watttime.Config{Username: w.User, Password: w.Password, Regions: regions, BaseURL: w.URL,
		AnswerBudget: answers, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("--watttime-*: %s", forecast.ErrorMessage(err))
	}
	return c, regions, nil
}
