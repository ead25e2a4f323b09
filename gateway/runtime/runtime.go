// Package runtime is carbongate's composition root: Params in, a running
// gateway out. New builds nothing yet; Run loads data and models, opens
// the registry, the store and its pollers, the controller, the admission
// webhook and the Carbon Aware SDK API, listens and starts serving; Close
// drains and stops them in the reverse order. cmd/carbongate only maps its
// flags to Params. The embedded default needs no services: bundled data,
// the cloud region table, trained model directories (optional) and a
// replay clock.
//
// With Discovery.Namespace the routes come from KServe instead: the
// InferenceServices labelled carbongate.io/zone in that namespace (listed
// through the Kubernetes API, in-cluster or with Discovery.Kubeconfig)
// while they are Ready.
//
// With RoutesFile (a YAML list of OIP model endpoints, see package
// gateway/route) each routed zone is forecast by its remote model first:
// remote zone model → remote generic model → in-process models → baseline
// → climatology, each remote step bounded by UpstreamTimeout and guarded by
// a per-endpoint circuit breaker. The file is re-read every RouteRefresh.
//
// Close drains: /readyz fails, it waits DrainDelay for load balancers to
// notice, then shuts the HTTP server down within ShutdownTimeout.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/controller"
	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/gateway/vendors"
	"github.com/carbongate/carbongate/gateway/wiring"
	"github.com/carbongate/carbongate/internal/tracing"
	"github.com/carbongate/carbongate/models/history"
	"github.com/carbongate/carbongate/models/ledger"
)

// Params is everything a caller chooses about a carbongate: the listener,
// the data and clock, the gateway's Options, and each optional part.
type Params struct {
	Addr        string
	DataDir     string // "": the bundled data
	Clock       string
	ReplayStart time.Time
	// ReplayAnchor, when set, is the wall instant at which the replay
	// clock reads ReplayStart (--replay-anchor), instead of the process's
	// start: replicas given the same flags tell the same time.
	ReplayAnchor    time.Time
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	AccessLog       bool
	// Logger is where everything logs; required.
	Logger *slog.Logger
	// Version names the build in traces.
	Version string
	// Collectors are registered on /metrics beside the runtime's own
	// (e.g. the build information).
	Collectors []prometheus.Collector

	// Options are the gateway's: models, horizon, step, route refresh,
	// upstream timeout, breaker, zone cap, vendor position.
	wiring.Options

	// MaxInFlight bounds the API requests served at once; 0:
	// httpapi.DefaultMaxInFlight.
	MaxInFlight int
	// MaxBacklog sheds API requests while this many goroutines wait for a
	// CPU; 0: httpapi.DefaultMaxBacklog; negative: off.
	MaxBacklog int
	// MaxConns bounds the open connections; 0: httpapi.DefaultMaxConns.
	MaxConns int

	RoutesFile string // static route file; "" = none
	// RouteSource, when set by code (KServe discovery), is where remote
	// models are routed from instead of RoutesFile; setting both is an error.
	RouteSource route.Source
	// Discovery, when its Namespace is set, routes to KServe
	// InferenceServices found through the Kubernetes API.
	Discovery Discovery
	// Registry, when its URI is set, serves MLflow's registry API and the
	// versions the champion alias points at, switching live on promotion.
	Registry Registry
	// Admission serves the VmTemplate admission webhook and TLS.
	Admission Admission
	// Store, when its URI is set, is where model history is read from
	// (production mode) and where the live pollers write.
	Store Store
	// Controller, when enabled, releases held workloads in Kubernetes.
	Controller Controller
	// ReplaySpeed runs the replay clock this many times as fast as the
	// wall clock (1: wall speed).
	ReplaySpeed float64
	// CASDK serves the Carbon Aware SDK's Web API.
	CASDK CASDK
}

// DefaultParams returns Params with the documented defaults (Logger still
// to set).
func DefaultParams() Params {
	return Params{
		Addr:            ":8080",
		Clock:           clock.ModeReplay,
		ReplayStart:     time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC),
		DrainDelay:      5 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		AccessLog:       true,
		Options:         wiring.DefaultOptions(),
		ReplaySpeed:     1,
		Controller:      Controller{Redecide: true, RedecideGain: controller.DefaultRedecideGain, ScheduleAhead: controller.DefaultScheduleAhead},
	}
}

// Check validates p.
func (p *Params) Check() error {
	if err := p.CASDK.check(); err != nil {
		return err
	}
	if err := p.Store.Vendor.check(); err != nil {
		return err
	}
	if name := p.Store.Vendor.Name; name != "" {
		if _, err := vendors.Find(p.Store.Ingest.Vendors(), name); err != nil {
			return err
		}
	}
	if _, err := wiring.ParseVendorPosition(string(p.VendorPosition)); err != nil {
		return fmt.Errorf("--vendor-position: %s", forecast.ErrorMessage(err))
	}
	switch {
	case p.RouteRefresh <= 0:
		return fmt.Errorf("--route-refresh must be positive, got %v", p.RouteRefresh)
	case p.UpstreamTimeout <= 0:
		return fmt.Errorf("--upstream-timeout must be positive, got %v", p.UpstreamTimeout)
	case p.Breaker.Failures < 1:
		return fmt.Errorf("--breaker-failures must be at least 1, got %d", p.Breaker.Failures)
	case p.Breaker.Cooldown <= 0:
		return fmt.Errorf("--breaker-cooldown must be positive, got %v", p.Breaker.Cooldown)
	case p.MaxInFlight < 1:
		return fmt.Errorf("--max-inflight must be at least 1, got %d", p.MaxInFlight)
	case p.MaxConns < 1:
		return fmt.Errorf("--max-conns must be at least 1, got %d", p.MaxConns)
	}
	if err := p.Controller.check(); err != nil {
		return err
	}
	if p.ReplaySpeed != 1 && p.Clock != clock.ModeReplay {
		return fmt.Errorf("--replay-speed needs --clock replay")
	}
	if !p.ReplayAnchor.IsZero() && p.Clock != clock.ModeReplay {
		return fmt.Errorf("--replay-anchor needs --clock replay")
	}
	if err := p.ZoneCap.Validate(); err != nil {
		return fmt.Errorf("--zone-cap-*: %s", forecast.ErrorMessage(err))
	}
	return nil
}

// Runtime is a carbongate built from Params: Run starts it, Close stops
// it.
type Runtime struct {
	Params

	controller controllerPart
	registry   registryPart
	admission  admissionPart
	store      storePart
	casdk      casdkPart

	ln        net.Listener
	srv       *http.Server
	api       *httpapi.Server
	routes    []httpedge.Route // of the mounted APIs
	gw        *wiring.Gateway
	reg       *prometheus.Registry // what /metrics serves
	tracing   *tracing.Tracing     // OTEL_* environment; closed last
	clk       clock.Clock
	warm      context.CancelFunc
	wg        sync.WaitGroup
	ready     atomic.Bool
	done      chan error
	closeOnce sync.Once
	closeErr  error
}

// New returns a Runtime of p; Run starts it.
func New(p Params) *Runtime {
	m := &Runtime{Params: p, done: make(chan error, 1)}
	m.controller.Controller = &m.Params.Controller
	m.registry.Registry = &m.Params.Registry
	m.admission.Admission = &m.Params.Admission
	m.store.Store = &m.Params.Store
	m.casdk.CASDK = &m.Params.CASDK
	return m
}

// Run loads data and models, listens on Addr and starts serving, then
// returns: a bind error surfaces here. Forecasts are warmed in the
// background; /readyz fails until they are.
func (m *Runtime) Run(ctx context.Context) (err error) {
	if m.Logger == nil {
		return errors.New("runtime: Params.Logger is not set")
	}
	if m.tracing, err = tracing.Setup(ctx, m.Logger, "carbongate", m.Version); err != nil {
		return err
	}
	clk, err := m.clock()
	if err != nil {
		return err
	}
	m.clk = clk
	if err := m.admission.load(m.Logger); err != nil {
		return err
	}
	tables, err := m.loadData()
	if err != nil {
		return err
	}
	regs, err := regions.Default()
	if err != nil {
		return fmt.Errorf("region table: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		healthCollector{reg: &m.registry, store: &m.store})
	reg.MustRegister(m.Collectors...)
	m.reg = reg
	if m.ModelsDir == "" {
		m.Logger.Warn("no --models directory; serving with the baseline and climatology only")
	}
	src, err := m.routeSource()
	if err != nil {
		return err
	}
	storeHist, err := m.store.open(m, reg, clk)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.store.close()
		}
	}()
	bundled := history.New(tables)
	var hist forecast.History = bundled
	if storeHist != nil {
		hist = storeHist
	}
	live, err := m.registry.open(m, hist)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.registry.close()
		}
	}()
	m.gw, err = wiring.New(ctx, wiring.Config{
		Registry: live, History: storeHist,
		Options: m.Options, Tables: tables, Regions: regs, Clock: clk,
		Registerer: reg, Logger: m.Logger, Routes: src, Vendor: m.vendor(),
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.gw.Close()
		}
	}()
	var obs ledger.Observations = bundled
	if m.store.conn != nil {
		obs = m.store.conn
	}
	if err := m.controller.open(m, clk, reg, obs); err != nil {
		return err
	}
	mount, err := m.registry.mount(m)
	if err != nil {
		return err
	}
	if mount, err = m.admission.mount(m, mount); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.admission.fed.close()
		}
	}()
	mount, casdkDoc, err := m.casdk.mount(m, mount, bundled, regs)
	if err != nil {
		return err
	}
	m.api, err = httpapi.New(httpapi.Config{
		OpenAPIExtra: [][]byte{m.Admission.openAPI(), casdkDoc},
		Mount:        mount, Routes: m.routes, Checks: mergeChecks(m.registry.checks, m.store.checks), MaxInFlight: m.MaxInFlight, MaxBacklog: m.MaxBacklog,
		Service: m.gw.Service, Logger: m.Logger, Metrics: reg, AccessLog: m.AccessLog,
		Ready: func() error {
			if !m.ready.Load() {
				return forecast.Errorf(forecast.EUNAVAILABLE, "warming the forecast cache")
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	m.ln, err = net.Listen("tcp", m.Addr)
	if err != nil {
		return err
	}
	conns := httpapi.NewConnLimit(m.MaxConns, m.admission.scheme() == "http")
	reg.MustRegister(conns.Collectors()...)
	m.ln = conns.Listener(m.admission.listener(m.ln))
	m.srv = m.api.HTTPServer()
	m.srv.ConnState = conns.ConnState
	m.srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.done <- err
		}
	}()
	m.gw.Start()
	m.controller.start(m)
	m.registry.start()
	m.store.start(m.Logger)
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.warm = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t0 := time.Now()
		if err := m.gw.Warm(wctx); err != nil && wctx.Err() == nil {
			m.Logger.Warn("warming forecasts", "error", err)
		}
		m.ready.Store(true)
		m.Logger.Info("forecasts warm", "zones", len(m.gw.DataZones()), "elapsed_ms", time.Since(t0).Milliseconds())
	}()
	zm, gm := m.gw.Models()
	remotes := 0
	if m.gw.Router != nil {
		remotes = len(m.gw.Router.Endpoints())
	}
	now := clk.Now()
	m.Logger.Info("carbongate listening", "addr", m.ln.Addr().String(), "clock", clk.Mode(), "now", now.Format(time.RFC3339),
		"zones_with_data", len(tables), "zone_models", zm, "generic_models", gm, "remote_endpoints", remotes, "horizon", m.Horizon.String())
	return nil
}

// vendor returns the vendor step's forecaster; nil without
// --vendor-forecast (a nil *vendorfc.Forecaster is not a nil interface).
func (m *Runtime) vendor() wiring.VendorForecaster {
	if m.store.forecaster == nil {
		return nil
	}
	return m.store.forecaster
}

// clock returns the clock of --clock, --replay-start, --replay-anchor and
// --replay-speed.
func (m *Runtime) clock() (clock.Clock, error) {
	if !m.ReplayAnchor.IsZero() {
		speed := m.ReplaySpeed
		if speed == 0 {
			speed = 1
		}
		r, err := clock.NewReplayAnchored(m.ReplayStart, m.ReplayAnchor, speed, nil)
		if err != nil {
			return nil, fmt.Errorf("--replay-anchor: %s", forecast.ErrorMessage(err))
		}
		return r, nil
	}
	clk, err := clock.Parse(m.Clock, m.ReplayStart)
	if err != nil || m.ReplaySpeed == 0 || m.ReplaySpeed == 1 {
		return clk, err
	}
	r, ok := clk.(*clock.Replay)
	if !ok {
		return nil, fmt.Errorf("--replay-speed needs --clock replay")
	}
	fast, err := r.WithSpeed(m.ReplaySpeed)
	if err != nil {
		return nil, fmt.Errorf("--replay-speed: %s", forecast.ErrorMessage(err))
	}
	return fast, nil
}

// routeSource returns where remote models are routed from: RouteSource,
// the --routes file (validated now, re-read at every refresh) or nothing.
func (m *Runtime) routeSource() (route.Source, error) {
	if m.RouteSource == nil {
		src, err := m.Discovery.source(m)
		if err != nil || src != nil {
			return src, err
		}
	}
	switch {
	case m.RouteSource != nil && m.RoutesFile != "":
		return nil, errors.New("--routes and a discovery route source are both set; use one")
	case m.RouteSource != nil:
		return m.RouteSource, nil
	case m.RoutesFile != "":
		f, err := route.NewFile(m.RoutesFile)
		if err != nil {
			return nil, fmt.Errorf("--routes: %w", err)
		}
		return f, nil
	}
	return nil, nil
}

func (m *Runtime) loadData() (map[forecast.Zone]*dataset.Table, error) {
	if m.DataDir == "" {
		return bundled.Load()
	}
	tables, issues, err := dataset.LoadDir(m.DataDir)
	if err != nil {
		return nil, err
	}
	if len(issues) > 0 {
		m.Logger.Warn("data loaded with repairs", "issues", len(issues), "first", issues[0].String())
	}
	return tables, nil
}

// URL returns the base URL the server listens on (after Run).
func (m *Runtime) URL() string {
	addr := m.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return m.admission.scheme() + "://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// Ready reports whether the forecasts are warm.
func (m *Runtime) Ready() bool { return m.ready.Load() }

// Done reports a server that stopped on its own with the error.
func (m *Runtime) Done() <-chan error { return m.done }

// Close drains and shuts down: /readyz fails, Close waits DrainDelay
// (requests are still served), then shuts the server down, waiting at most
// ShutdownTimeout for in-flight requests, and stops the forecast cache.
// Calling Close again returns the first result.
func (m *Runtime) Close() error {
	m.closeOnce.Do(func() {
		defer func() { m.closeErr = errors.Join(m.closeErr, m.tracing.Close()) }()
		if m.srv == nil {
			m.admission.fed.close()
			m.registry.close()
			m.store.close()
			if m.gw != nil {
				m.gw.Close()
			}
			return
		}
		m.api.Drain()
		m.Logger.Info("draining", "delay", m.DrainDelay.String())
		time.Sleep(m.DrainDelay)
		ctx, cancel := context.WithTimeout(context.Background(), m.ShutdownTimeout)
		defer cancel()
		if err := m.srv.Shutdown(ctx); err != nil {
			m.closeErr = fmt.Errorf("shutdown: %w", err)
			m.srv.Close()
		}
		m.warm()
		m.controller.close()
		m.admission.fed.close()
		m.registry.close()
		m.store.close()
		m.gw.Close()
		m.wg.Wait()
		m.Logger.Info("stopped")
	})
	return m.closeErr
}
