// Router keeps one remote forecaster per routed OIP endpoint and
// answers "which forecaster serves this zone": the zone's own model, or the
// generic model. It reads its endpoints from a route.Source (a static route
// file, KServe discovery) and re-reads them periodically; an endpoint that
// changes gets a new client while requests in flight on the old one finish.
package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/remote/breaker"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/oip"
)

// DefaultRefresh is how often the endpoints are re-read by default.
const DefaultRefresh = 30 * time.Second

// Dialer returns the client of an endpoint. The client is owned by the
// router, which closes it when the endpoint goes away or on Close.
type Dialer func(route.Endpoint) (oip.Client, error)

// RouterConfig configures a Router.
type RouterConfig struct {
	Source  route.Source     // required
	Dial    Dialer           // required; Dial in production
	History forecast.History // required: the input of remote models
	// Signal is the signal remote models forecast (route.Endpoint does not
	// carry one); zones are routed for it only. Default lifecycle.
	Signal   forecast.Signal
	Timeout  time.Duration  // per upstream call, retries included; 0: the caller's deadline only
	Breaker  breaker.Config // per endpoint
	Metrics  *Metrics
	Refresh  time.Duration // how often Start's loop re-reads the source; default DefaultRefresh
	SourceTO time.Duration // bound of one source read; default 10s
	Logger   *slog.Logger  // nil: discard
}

// Router is safe for concurrent use.
type Router struct {
	cfg     RouterConfig
	table   atomic.Pointer[table]
	mu      sync.Mutex // serializes Refresh and Close
	closed  bool
	wg      sync.WaitGroup // refresh loop and retiring forecasters
	ctx     context.Context
	cancel  context.CancelFunc // ends the refresh loop
	started bool
}

// table is an immutable routing table.
type table struct {
	byEndpoint map[route.Endpoint]*Forecaster
	zone       map[forecast.Zone]*Forecaster
	generic    *Forecaster
}

// New validates cfg and returns a Router with no routes: call Refresh to
// read the source once (at startup, so that a broken source fails early)
// and Start to keep it fresh.
func NewRouter(cfg RouterConfig) (*Router, error) {
	if cfg.Source == nil || cfg.Dial == nil || cfg.History == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "router: Source, Dial and History are required")
	}
	if cfg.Signal == "" {
		cfg.Signal = forecast.SignalLifecycle
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.SourceTO <= 0 {
		cfg.SourceTO = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{cfg: cfg}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.table.Store(&table{byEndpoint: map[route.Endpoint]*Forecaster{}, zone: map[forecast.Zone]*Forecaster{}})
	return r, nil
}

// Zone returns the forecaster of zone's own model for signal, or nil when
// the zone is not routed. The result must be used as a forecast.Forecaster
// (a nil *Forecaster is not returned as a non-nil interface).
func (r *Router) Zone(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster {
	if signal != r.cfg.Signal {
		return nil
	}
	if f := r.table.Load().zone[zone]; f != nil {
		return f
	}
	return nil
}

// Generic returns the forecaster of the generic model for signal, or nil.
func (r *Router) Generic(signal forecast.Signal) forecast.Forecaster {
	if signal != r.cfg.Signal {
		return nil
	}
	if f := r.table.Load().generic; f != nil {
		return f
	}
	return nil
}

// Endpoints returns the routed endpoints, zones first by id, then generic.
func (r *Router) Endpoints() []route.Endpoint {
	t := r.table.Load()
	eps := slices.Collect(maps.Keys(t.byEndpoint))
	slices.SortFunc(eps, func(a, b route.Endpoint) int {
		switch {
		case a.Generic() != b.Generic():
			if a.Generic() {
				return 1
			}
			return -1
		case a.Zone != b.Zone:
			if a.Zone < b.Zone {
				return -1
			}
			return 1
		}
		return 0
	})
	return eps
}

// Forecaster returns the forecaster of an endpoint currently routed.
func (r *Router) Forecaster(e route.Endpoint) (*Forecaster, bool) {
	f, ok := r.table.Load().byEndpoint[e]
	return f, ok
}

// Refresh reads the source and swaps in its endpoints: unchanged endpoints
// keep their forecaster (and its client, contract and breaker), new ones
// are dialed, and those gone are retired: they stop being routed at once
// and their clients are closed once the calls in flight on them end.
// When the source fails, the current routes stay and the error is returned.
// Endpoints that cannot be dialed, and later duplicates of a zone, are
// skipped and reported in the returned error; the others are routed.
func (r *Router) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.SourceTO)
	defer cancel()
	eps, err := r.cfg.Source.Endpoints(ctx)
	if err != nil {
		return fmt.Errorf("router: read routes: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return forecast.Errorf(forecast.EUNAVAILABLE, "router is closed")
	}
	old := r.table.Load()
	next := &table{byEndpoint: make(map[route.Endpoint]*Forecaster, len(eps)), zone: make(map[forecast.Zone]*Forecaster, len(eps))}
	var errs []error
	for _, e := range eps {
		if e.Generic() && next.generic != nil || !e.Generic() && next.zone[e.Zone] != nil {
			errs = append(errs, fmt.Errorf("router: %s: zone already routed, skipped", Label(e)))
			continue
		}
		f := old.byEndpoint[e]
		if f == nil {
			if f, err = r.dial(e); err != nil {
				errs = append(errs, fmt.Errorf("router: %s: %w", Label(e), err))
				continue
			}
			r.cfg.Logger.Info("endpoint routed", "endpoint", Label(e))
		}
		next.byEndpoint[e] = f
		if e.Generic() {
			next.generic = f
		} else {
			next.zone[e.Zone] = f
		}
	}
	r.table.Store(next)
	for e, f := range old.byEndpoint {
		if next.byEndpoint[e] == nil {
			r.cfg.Logger.Info("endpoint no longer routed", "endpoint", Label(e))
			r.retire(e, f)
		}
	}
	return errors.Join(errs...)
}

func (r *Router) dial(e route.Endpoint) (*Forecaster, error) {
	c, err := r.cfg.Dial(e)
	if err != nil {
		return nil, err
	}
	f, err := New(Config{
		Endpoint: e, Client: c, History: r.cfg.History, Signal: r.cfg.Signal,
		Timeout: r.cfg.Timeout, Breaker: r.cfg.Breaker, Metrics: r.cfg.Metrics,
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return f, nil
}

// retire closes f in the background once its calls end; r.mu is held.
func (r *Router) retire(e route.Endpoint, f *Forecaster) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := f.Close(); err != nil {
			r.cfg.Logger.Warn("closing endpoint client", "endpoint", Label(e), "error", err)
		}
		r.cfg.Metrics.Forget(Label(e))
	}()
}

// Start starts re-reading the source every Refresh until Close. A failed
// read is logged and the current routes stay. Start is a no-op after the
// first call.
func (r *Router) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(r.cfg.Refresh)
		defer t.Stop()
		for {
			select {
			case <-r.ctx.Done():
				return
			case <-t.C:
			}
			if err := r.Refresh(r.ctx); err != nil && r.ctx.Err() == nil {
				r.cfg.Logger.Warn("route refresh", "error", err)
			}
		}
	}()
}

// Close stops the refresh loop, unroutes every endpoint, waits for the
// calls in flight and closes every client.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.cancel()
	old := r.table.Swap(&table{byEndpoint: map[route.Endpoint]*Forecaster{}, zone: map[forecast.Zone]*Forecaster{}})
	for e, f := range old.byEndpoint {
		r.retire(e, f)
	}
	r.mu.Unlock()
	r.wg.Wait()
	return nil
}
