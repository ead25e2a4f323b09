package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/ingest/electricitymaps"
	"github.com/carbongate/carbongate/gateway/ingest/watttime"
	"github.com/carbongate/carbongate/oip"
)

// Ingest configures the live pollers that write observed intensity into
// the store: Electricity Maps for the average signals, WattTime for the
// marginal one. Credentials come from the environment by default so that
// they stay out of process listings.
type Ingest struct {
	Zones    string        // --ingest-zones: Electricity Maps feeds
	Signals  string        // --ingest-signals
	Interval time.Duration // --ingest-interval
	Backfill time.Duration // --ingest-backfill

	EMToken string // --electricitymaps-token, default $ELECTRICITYMAPS_TOKEN
	EMURL   string // --electricitymaps-url

	WTUser     string // --watttime-user, default $WATTTIME_USERNAME
	WTPassword string // $WATTTIME_PASSWORD only
	WTRegions  string // --watttime-regions ZONE=REGION,…
	WTURL      string // --watttime-url
}

// ingestPart is the Ingest of a running carbongate.
type ingestPart struct {
	*Ingest
	// answers is the one budget of vendor answers being read, shared by
	// every vendor client of the process (pollers and vendor forecasts).
	answers     *oip.BodyBudget
	answersOnce sync.Once
}

// answerBudget returns the process's budget of vendor answers, made on
// first use.
func (in *ingestPart) answerBudget() *oip.BodyBudget {
	in.answersOnce.Do(func() { in.answers = ingest.NewAnswerBudget() })
	return in.answers
}

func (in *Ingest) enabled() bool { return in.Zones != "" || in.WTRegions != "" }

// poller builds the pollers' feeds and returns nil when none is asked for.
func (in *ingestPart) poller(sink store.Observed, reg prometheus.Registerer, clk clock.Clock, log *slog.Logger) (*ingest.Poller, error) {
	if !in.enabled() {
		return nil, nil
	}
	var feeds []ingest.Feed
	if in.Zones != "" {
		f, err := in.emFeeds(log)
		if err != nil {
			return nil, err
		}
		feeds = append(feeds, f...)
	}
	if in.WTRegions != "" {
		f, err := in.wtFeeds(log)
		if err != nil {
			return nil, err
		}
		feeds = append(feeds, f...)
	}
	if in.Interval <= 0 || in.Backfill <= 0 {
		return nil, fmt.Errorf("--ingest-interval and --ingest-backfill must be positive")
	}
	metrics, err := ingest.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	p, err := ingest.New(ingest.Config{
		Sink: ingest.StoreSink(sink), Feeds: feeds, Interval: in.Interval, Backfill: in.Backfill,
		Clock: pollClock{clk}, Metrics: metrics, Logger: log.With("component", "ingest"),
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: %s", forecast.ErrorMessage(err))
	}
	return p, nil
}

func (in *ingestPart) emFeeds(log *slog.Logger) ([]ingest.Feed, error) {
	if strings.TrimSpace(in.EMToken) == "" {
		return nil, fmt.Errorf("--ingest-zones needs an Electricity Maps token: set --electricitymaps-token or $ELECTRICITYMAPS_TOKEN")
	}
	c, err := electricitymaps.New(electricitymaps.Config{Token: in.EMToken, BaseURL: in.EMURL, AnswerBudget: in.answerBudget(), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--electricitymaps-url: %s", forecast.ErrorMessage(err))
	}
	zones, err := parseZoneList(in.Zones)
	if err != nil {
		return nil, fmt.Errorf("--ingest-zones: %w", err)
	}
	var feeds []ingest.Feed
	for _, s := range strings.Split(in.Signals, ",") {
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

func (in *ingestPart) wtFeeds(log *slog.Logger) ([]ingest.Feed, error) {
	c, regions, err := in.wtClient(log)
	if err != nil {
		return nil, err
	}
	feeds := make([]ingest.Feed, 0, len(regions))
	for _, z := range slices.Sorted(maps.Keys(regions)) {
		feeds = append(feeds, ingest.Feed{Source: c, Zone: z, Signal: ingest.SignalMarginal})
	}
	return feeds, nil
}

// wtClient returns the WattTime client of the credentials and
// --watttime-regions, and the regions by zone.
func (in *ingestPart) wtClient(log *slog.Logger) (*watttime.Client, map[forecast.Zone]string, error) {
	if in.WTUser == "" || in.WTPassword == "" {
		return nil, nil, fmt.Errorf("--watttime-regions needs WattTime credentials: --watttime-user (or $WATTTIME_USERNAME) and $WATTTIME_PASSWORD")
	}
	regions := map[forecast.Zone]string{}
	for _, pair := range strings.Split(in.WTRegions, ",") {
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
	c, err := watttime.New(watttime.Config{Username: in.WTUser, Password: in.WTPassword, Regions: regions, BaseURL: in.WTURL,
		AnswerBudget: in.answerBudget(), Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("--watttime-*: %s", forecast.ErrorMessage(err))
	}
	return c, regions, nil
}

func parseZoneList(s string) ([]forecast.Zone, error) {
	var out []forecast.Zone
	for _, part := range strings.Split(s, ",") {
		z, err := forecast.ParseZone(part)
		if err != nil {
			return nil, fmt.Errorf("%s", forecast.ErrorMessage(err))
		}
		out = append(out, z)
	}
	return out, nil
}

// pollClock lets the pollers follow the gateway's clock (the replay clock
// included) while sleeping in real time.
type pollClock struct{ clock.Clock }

func (c pollClock) Sleep(ctx context.Context, d time.Duration) error {
	return ingest.SystemClock{}.Sleep(ctx, d)
}
