package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/vendors"
	"github.com/carbongate/carbongate/oip"
)

// Ingest configures the live pollers that write observed intensity into
// the store, from the vendors of its list (Vendors). Credentials come from
// the environment by default so that they stay out of process listings.
type Ingest struct {
	Interval time.Duration // --ingest-interval
	Backfill time.Duration // --ingest-backfill

	// The vendors, each with its settings; Vendors lists them.
	ElectricityMaps vendors.ElectricityMaps
	WattTime        vendors.WattTime
}

// Vendors is the list of the vendors: one line each.
func (in *Ingest) Vendors() []vendors.Vendor {
	return []vendors.Vendor{&in.ElectricityMaps, &in.WattTime}
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

// polled is the vendors whose settings ask for observed feeds.
func (in *Ingest) polled() []vendors.Vendor {
	var out []vendors.Vendor
	for _, v := range in.Vendors() {
		if v.Polls() {
			out = append(out, v)
		}
	}
	return out
}

// poller builds the pollers' feeds and returns nil when none is asked for.
func (in *ingestPart) poller(sink store.Observed, reg prometheus.Registerer, clk clock.Clock, log *slog.Logger) (*ingest.Poller, error) {
	polled := in.polled()
	if len(polled) == 0 {
		return nil, nil
	}
	var feeds []ingest.Feed
	for _, v := range polled {
		f, err := v.Feeds(in.answerBudget(), log)
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

// pollClock lets the pollers follow the gateway's clock (the replay clock
// included) while sleeping in real time.
type pollClock struct{ clock.Clock }

func (c pollClock) Sleep(ctx context.Context, d time.Duration) error {
	return ingest.SystemClock{}.Sleep(ctx, d)
}
