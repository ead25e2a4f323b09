package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/ingest"
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

	conn   *storeConn
	poller *ingest.Poller
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Store) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.URI, "store", s.URI, "observed-signals store, postgres://… or crate://…: model history is read from it (production mode) and the pollers write into it; absent: the bundled data")
	fs.BoolVar(&s.Migrate, "store-migrate", s.Migrate, "create the store's tables when absent, at startup")
	s.Ingest.flags(fs)
}

// open validates the flags and connects in the background: while the
// database is unreachable, forecasts fall back (the history is missing)
// and /readyz says so. It returns the history the models read.
func (s *Store) open(m *Main, reg prometheus.Registerer, clk clock.Clock) (forecast.History, error) {
	if s.URI == "" {
		if s.Ingest.enabled() {
			return nil, fmt.Errorf("--ingest-zones and --watttime-regions need --store: the pollers write into the store")
		}
		return nil, nil
	}
	if !strings.Contains(s.URI, "://") {
		return nil, fmt.Errorf("--store %q is not a postgres:// or crate:// URL", redactURL(s.URI))
	}
	open := s.Open
	if open == nil {
		open = connect.Open
	}
	s.conn = &storeConn{open: func(ctx context.Context) (store.DB, error) {
		db, err := open(ctx, s.URI)
		if err != nil || !s.Migrate {
			return db, err
		}
		if err := db.Migrate(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	}, retry: 5 * time.Second}
	p, err := s.Ingest.poller(s.conn, reg, clk, m.Logger)
	if err != nil {
		return nil, err
	}
	s.poller = p
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.conn.get(ctx); err != nil {
		m.Logger.Warn("store unreachable at startup; forecasts fall back until it answers", "error", err)
	}
	return s.conn, nil
}

// start runs the pollers until close.
func (s *Store) start(log interface{ Warn(string, ...any) }) {
	if s.poller == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.poller.Run(ctx); err != nil && ctx.Err() == nil {
			log.Warn("ingest pollers stopped", "error", err)
		}
	}()
}

// checks reports the store and the pollers in /readyz.
func (s *Store) checks() map[string]string {
	if s.conn == nil {
		return nil
	}
	out := map[string]string{"store": "connected"}
	if err := s.conn.err(); err != nil {
		out["store"] = "unreachable (" + forecast.ErrorMessage(err) + "); forecasts fall back to the baseline and climatology"
	}
	if s.poller != nil {
		var bad []string
		for _, st := range s.poller.Status() {
			if st.LastError != "" {
				bad = append(bad, fmt.Sprintf("%s %s/%s: %s", st.Source, st.Zone, st.Signal, st.LastError))
			}
		}
		out["ingest"] = "ok"
		if len(bad) > 0 {
			out["ingest"] = strings.Join(bad, "; ")
		}
	}
	return out
}

func (s *Store) close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.conn != nil {
		s.conn.close()
	}
}

// redactURL drops a URL's password so that it can appear in an error.
func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	return u[:scheme+3] + "…" + u[at:]
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

// storeConn is a store.Observed that connects on first use and again, at
// most every retry, after a failed attempt. Callers arriving while an
// attempt runs wait for it, as long as their context allows.
type storeConn struct {
	open  func(ctx context.Context) (store.DB, error)
	retry time.Duration

	mu      sync.Mutex
	db      store.DB
	attempt chan struct{} // non-nil while connecting; closed when done
	tried   time.Time
	lastErr error
}

var _ store.Observed = (*storeConn)(nil)

func (c *storeConn) get(ctx context.Context) (store.DB, error) {
	c.mu.Lock()
	if c.db != nil {
		db := c.db
		c.mu.Unlock()
		return db, nil
	}
	ch := c.attempt
	if ch == nil {
		if !c.tried.IsZero() && time.Since(c.tried) < c.retry {
			err := c.lastErr
			c.mu.Unlock()
			return nil, err
		}
		ch = make(chan struct{})
		c.attempt, c.tried = ch, time.Now()
		go c.connect(ch)
	}
	c.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "store: still connecting: %v", ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db == nil {
		return nil, c.lastErr
	}
	return c.db, nil
}

// connect makes one attempt, then closes ch.
func (c *storeConn) connect(ch chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := c.open(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.lastErr = forecast.Errorf(forecast.EUNAVAILABLE, "store: %s", forecast.ErrorMessage(err))
	} else {
		c.db, c.lastErr = db, nil
	}
	c.attempt = nil
	close(ch)
}

// err is the last connection error; nil once connected. It tries to
// connect when no attempt was made in the last retry interval.
func (c *storeConn) err() error {
	_, err := c.get(context.Background())
	return err
}

func (c *storeConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
}

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

// envOr returns the environment variable's value, or def when unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
