package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/gateway/vendorfc"
	"github.com/carbongate/carbongate/registry/lazy"
)

// Store configures production mode: model history is read from the
// observed-signals store instead of the bundled data, and live pollers keep
// that store up to date from Electricity Maps and WattTime.
type Store struct {
	URI     string // --store; "" = the bundled data
	Migrate bool   // --store-migrate
	// Open connects to URI; nil: connect.Open. Tests inject a store.
	Open func(ctx context.Context, uri string) (store.DB, error)

	Ingest Ingest
	// Vendor is a vendor's forecast: a step of the chain and, with URI,
	// stored by a poller.
	Vendor Vendor
}

// storePart is the Store of a running carbongate: the connection, the
// pollers and the vendor's forecaster.
type storePart struct {
	*Store
	ingest       ingestPart
	conn         *storeConn
	poller       *ingest.Poller
	forecaster   *vendorfc.Forecaster // nil without a vendor
	vendorPoller *vendorfc.StorePoller
	cancel       context.CancelFunc
	done         chan struct{}
}

// open validates the flags and connects in the background: while the
// database is unreachable, forecasts fall back (the history is missing)
// and /readyz says so. It returns the history the models read.
func (s *storePart) open(m *Runtime, reg prometheus.Registerer, clk clock.Clock) (forecast.History, error) {
	s.ingest.Ingest = &s.Ingest
	f, err := s.Vendor.open(&s.ingest, reg, m.Logger)
	if err != nil {
		return nil, err
	}
	s.forecaster = f
	if s.URI == "" {
		switch {
		case s.Vendor.Store != "":
			return nil, fmt.Errorf("--vendor-store-zones needs --store: the vendor's forecasts are stored there")
		case pollsIntoStore(&s.Ingest, s.Vendor.Name):
			return nil, fmt.Errorf("--ingest-zones and --watttime-regions need --store: the pollers write into the store")
		}
		return nil, nil
	}
	if !strings.Contains(s.URI, "://") {
		return nil, fmt.Errorf("--store %s is not a postgres:// or crate:// URL", forecast.RedactURI(s.URI))
	}
	open := s.Open
	if open == nil {
		open = connect.Open
	}
	s.conn = &storeConn{conn: lazy.NewConn("store", func(ctx context.Context) (store.DB, error) {
		db, err := open(ctx, s.URI)
		if err != nil || !s.Migrate {
			return db, err
		}
		if err := db.Migrate(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}, func(db store.DB) error { db.Close(); return nil }, 5*time.Second, m.Logger)}
	p, err := s.ingest.poller(s.conn, reg, clk, m.Logger)
	if err != nil {
		return nil, err
	}
	s.poller = p
	if s.Vendor.Store != "" {
		feeds, err := s.Vendor.feeds(s.forecaster)
		if err != nil {
			return nil, err
		}
		if s.vendorPoller, err = vendorfc.NewStorePoller(vendorfc.StoreConfig{Forecaster: s.forecaster, Store: s.conn, Feeds: feeds,
			Interval: s.Vendor.Interval, Logger: m.Logger.With("component", "vendor")}); err != nil {
			return nil, fmt.Errorf("--vendor-store-zones: %s", forecast.ErrorMessage(err))
		}
	}
	return s.conn, nil
}

// start runs the pollers until close.
func (s *storePart) start(log interface{ Warn(string, ...any) }) {
	var runs []func(context.Context) error
	if s.poller != nil {
		runs = append(runs, s.poller.Run)
	}
	if s.vendorPoller != nil {
		runs = append(runs, s.vendorPoller.Run)
	}
	if len(runs) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				log.Warn("pollers stopped", "error", err)
			}
		})
	}
	go func() {
		wg.Wait()
		close(s.done)
	}()
}

// checks reports the store and the pollers in /readyz.
func (s *storePart) checks() map[string]string {
	if s.conn == nil {
		return nil
	}
	out := map[string]string{"store": "connected"}
	if err := s.conn.err(); err != nil {
		out["store"] = "unreachable (" + forecast.ErrorSummary(err) + "); forecasts fall back to the baseline and climatology"
	}
	if s.poller != nil {
		var bad []string
		for _, st := range s.poller.Status() {
			if st.LastError != "" { // logged by the poller; it may name URLs
				bad = append(bad, fmt.Sprintf("%s %s/%s: the last round failed", st.Source, st.Zone, st.Signal))
			}
		}
		out["ingest"] = "ok"
		if len(bad) > 0 {
			out["ingest"] = strings.Join(bad, "; ")
		}
	}
	return out
}

func (s *storePart) close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.conn != nil {
		s.conn.close()
	}
}

// mergeChecks joins the /readyz notes of several parts.
func mergeChecks(parts ...func() map[string]string) func() map[string]string {
	return func() map[string]string {
		var out map[string]string
		for _, p := range parts {
			for k, v := range p() {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = v
			}
		}
		return out
	}
}

// storeConn is a store.Observed over a connection opened in the
// background (lazy.Conn): while the database is unreachable every call
// fails fast with EUNAVAILABLE, so forecasts fall back at once.
type storeConn struct {
	conn *lazy.Conn[store.DB]
}

var _ store.Observed = (*storeConn)(nil)

func (c *storeConn) get(context.Context) (store.DB, error) { return c.conn.Get() }

// err is the last connection error; nil once connected.
func (c *storeConn) err() error {
	_, err := c.conn.Get()
	return err
}

func (c *storeConn) close() { c.conn.Close() }

func (c *storeConn) Last(ctx context.Context, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	db, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return db.Last(ctx, zone, signal, end, n)
}

func (c *storeConn) UpsertObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal, obs []store.Observation) error {
	db, err := c.get(ctx)
	if err != nil {
		return err
	}
	return db.UpsertObserved(ctx, zone, signal, obs)
}

func (c *storeConn) LatestObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error) {
	db, err := c.get(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	return db.LatestObserved(ctx, zone, signal)
}

func (c *storeConn) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	db, err := c.get(ctx)
	if err != nil {
		return forecast.Series{}, err
	}
	return db.Observed(ctx, zone, signal, from, to)
}

// WriteForecasts writes into the forecast store of the same database (the
// vendor's forecasts).
func (c *storeConn) WriteForecasts(ctx context.Context, job string, units []store.Unit, rows []store.ForecastRow) error {
	db, err := c.get(ctx)
	if err != nil {
		return err
	}
	return db.WriteForecasts(ctx, job, units, rows)
}

// Done implements store.Forecasts.
func (c *storeConn) Done(ctx context.Context, job string) ([]store.Unit, error) {
	db, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	return db.Done(ctx, job)
}

// ReadForecasts reads the forecast store of the same database (the
// Carbon Aware SDK's batch forecasts).
func (c *storeConn) ReadForecasts(ctx context.Context, q store.ForecastQuery, fn func(store.ForecastRow) error) error {
	db, err := c.get(ctx)
	if err != nil {
		return err
	}
	return db.ReadForecasts(ctx, q, fn)
}

// pollsIntoStore reports whether the settings ask a vendor for observed
// feeds beyond what the forecast vendor's own settings need (WattTime's
// regions serve its forecasts too): those feeds need a store.
func pollsIntoStore(in *Ingest, forecastVendor string) bool {
	for _, v := range in.polled() {
		if !v.FeedsForecast() || v.Name() != forecastVendor {
			return true
		}
	}
	return false
}
