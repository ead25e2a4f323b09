package vendorfc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// DefaultStoreInterval is the pause between two rounds of a StorePoller.
const DefaultStoreInterval = time.Hour

// Feed is one (zone, signal) whose vendor forecasts a StorePoller stores.
type Feed struct {
	Zone   forecast.Zone
	Signal forecast.Signal
}

// StoreConfig configures a StorePoller.
type StoreConfig struct {
	Forecaster *Forecaster     // required: its cache and limits are shared with the fallback step
	Store      store.Forecasts // required
	Feeds      []Feed          // required; each one the vendor Serves
	Interval   time.Duration   // default DefaultStoreInterval
	Clock      ingest.Clock    // sleeps between rounds; nil: ingest.SystemClock
	Logger     *slog.Logger    // nil: discard
}

// StorePoller writes a vendor's forecasts into the forecast store, so that
// carbonctl evaluate --store scores them beside carbongate's models. Each
// issue is stored as rows of model "vendor:<vendor>" (version: the
// vendor's model, "" when it names none), issued at the vendor's first
// forecast hour, one row per forecast hour, without an interval. An issue
// stored again (the vendor has not made a new one) replaces its rows.
type StorePoller struct {
	cfg StoreConfig
	log *slog.Logger
}

// NewStorePoller validates cfg and returns a StorePoller; it makes no call.
func NewStorePoller(cfg StoreConfig) (*StorePoller, error) {
	if cfg.Forecaster == nil || cfg.Store == nil || len(cfg.Feeds) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "feeds", "vendorfc: a Forecaster, a Store and feeds are required")
	}
	for _, fd := range cfg.Feeds {
		if !cfg.Forecaster.Serves(fd.Zone, fd.Signal) {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "feeds", "vendorfc: %s does not forecast %s of %s", cfg.Forecaster.Vendor(), fd.Signal, fd.Zone)
		}
	}
	if cfg.Interval < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "interval", "vendorfc: interval must be ≥ 0")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultStoreInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = ingest.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &StorePoller{cfg: cfg, log: cfg.Logger}, nil
}

// Job is the forecast store's job name of vendor's stored issues; each
// issue is a unit (zone, issue time) of it.
func Job(vendor string) string { return ModelName(vendor) }

// Run makes a round right away, then one every Interval, until ctx ends;
// it returns nil then. Failures are logged and retried next round.
func (p *StorePoller) Run(ctx context.Context) error {
	for {
		_ = p.Poll(ctx) // logged per feed
		if err := p.cfg.Clock.Sleep(ctx, p.cfg.Interval); err != nil {
			return nil
		}
	}
}

// Poll stores the vendor's current forecast of every feed and returns the
// feeds' errors joined.
func (p *StorePoller) Poll(ctx context.Context) error {
	var errs []error
	for _, fd := range p.cfg.Feeds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := p.store(ctx, fd); err != nil {
			p.log.LogAttrs(ctx, slog.LevelWarn, "vendorfc: vendor forecast not stored; retried next round", slog.String("vendor", p.cfg.Forecaster.Vendor()),
				slog.String("zone", string(fd.Zone)), slog.String("signal", string(fd.Signal)), slog.String("error", forecast.ErrorMessage(err)))
			errs = append(errs, fmt.Errorf("%s %s: %w", fd.Zone, fd.Signal, err))
		}
	}
	return errors.Join(errs...)
}

func (p *StorePoller) store(ctx context.Context, fd Feed) error {
	is, err := p.cfg.Forecaster.Current(ctx, fd.Zone, fd.Signal)
	if err != nil {
		return err
	}
	rows := Rows(is)
	if len(rows) == 0 {
		return nil
	}
	unit := store.Unit{Zone: is.Zone, IssuedAt: is.Start}
	if err := p.cfg.Store.WriteForecasts(ctx, Job(is.Vendor), []store.Unit{unit}, rows); err != nil {
		return err
	}
	p.log.LogAttrs(ctx, slog.LevelDebug, "vendorfc: vendor forecast stored", slog.String("vendor", is.Vendor),
		slog.String("zone", string(is.Zone)), slog.String("signal", string(is.Signal)), slog.Time("issued_at", is.Start), slog.Int("hours", len(rows)))
	return nil
}

// Rows returns the forecast-store rows of an issue (see StorePoller).
func Rows(is Issue) []store.ForecastRow {
	rows := make([]store.ForecastRow, len(is.Values))
	for i, v := range is.Values {
		rows[i] = store.ForecastRow{Zone: is.Zone, Signal: is.Signal, ModelName: ModelName(is.Vendor), ModelVersion: is.Model,
			IssuedAt: is.Start, TargetTime: is.Start.Add(time.Duration(i) * forecast.Hour), Value: v, Lower: math.NaN(), Upper: math.NaN()}
	}
	return rows
}
