// Command carbongate is the carbon-aware scheduling gateway. The embedded
// default needs no services: bundled data, the cloud region table, trained
// model directories (optional) and a replay clock.
//
//	carbongate --addr :8080 --models DIR --clock replay --replay-start 2021-06-01T00:00:00Z
//
// With --kserve-namespace NS the routes come from KServe instead: the
// InferenceServices labelled carbongate.io/zone in NS (listed through the
// Kubernetes API, in-cluster or with --kubeconfig) while they are Ready.
//
// With --routes FILE (a YAML list of OIP model endpoints, see package
// gateway/route) each routed zone is forecast by its remote model first:
// remote zone model → remote generic model → in-process models → baseline
// → climatology, each remote step bounded by --upstream-timeout and
// guarded by a per-endpoint circuit breaker. The file is re-read every
// --route-refresh.
//
// On SIGTERM or SIGINT it drains: /readyz fails, it waits --drain-delay for
// load balancers to notice, then shuts the HTTP server down within
// --shutdown-timeout.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/cmd/internal/daemon"
	"github.com/carbongate/carbongate/cmd/internal/version"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/guard"
	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/remote/breaker"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/gateway/router"
	"github.com/carbongate/carbongate/gateway/tracing"
	"github.com/carbongate/carbongate/gateway/wiring"
	"github.com/carbongate/carbongate/models/history"
)

func main() {
	m := NewMain()
	daemon.Exit("carbongate", m, func() *slog.Logger { return m.Logger })
}

// Main is the carbongate program: ParseFlags, then Run (which returns once
// the server listens), then Close (which drains and shuts down).
type Main struct {
	Addr            string
	ModelsDir       string
	DataDir         string // "": the bundled data
	Clock           string
	ReplayStart     time.Time
	Step            time.Duration
	Horizon         time.Duration
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	AccessLog       bool
	Stderr          io.Writer // logs; default os.Stderr

	// MaxInFlight bounds the API requests served at once (--max-inflight);
	// 0: httpapi.DefaultMaxInFlight.
	MaxInFlight int
	// MaxBacklog sheds API requests while this many goroutines wait for a
	// CPU (--max-backlog); 0: httpapi.DefaultMaxBacklog; negative: off.
	MaxBacklog int
	// MaxConns bounds the open connections (--max-conns); 0:
	// httpapi.DefaultMaxConns.
	MaxConns int
	// ZoneCap spreads bursts of decisions over zones (--zone-cap-share,
	// --zone-cap-window, --zone-cap-min); Share 0: off.
	ZoneCap guard.Config

	RoutesFile      string        // --routes: static route file; "" = none
	RouteRefresh    time.Duration // how often the routes are re-read
	UpstreamTimeout time.Duration // each remote step
	BreakerFailures int           // consecutive failures that open an endpoint's breaker
	BreakerCooldown time.Duration // how long an open breaker fails fast before a probe
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
	// wall clock (--replay-speed; 1: wall speed).
	ReplaySpeed float64
	// CASDK serves the Carbon Aware SDK's Web API.
	CASDK CASDK

	Logger *slog.Logger

	ln        net.Listener
	srv       *http.Server
	api       *httpapi.Server
	routes    []httpapi.Route // of the mounted APIs
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

// NewMain returns a Main with the documented defaults.
func NewMain() *Main {
	return &Main{
		Addr:            ":8080",
		Clock:           clock.ModeReplay,
		ReplayStart:     time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC),
		Step:            gateway.DefaultStep,
		Horizon:         gateway.DefaultHorizon,
		DrainDelay:      5 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		LogLevel:        slog.LevelInfo,
		AccessLog:       true,
		Stderr:          os.Stderr,
		RouteRefresh:    router.DefaultRefresh,
		UpstreamTimeout: wiring.DefaultUpstreamTimeout,
		BreakerFailures: breaker.DefaultFailures,
		BreakerCooldown: breaker.DefaultCooldown,
		done:            make(chan error, 1),
	}
}

// ParseFlags reads the command line into m.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("carbongate", flag.ContinueOnError)
	cfs := cli.Wrap(fs, os.Stdout)
	fs.StringVar(&m.Addr, "addr", m.Addr, "listen address")
	fs.StringVar(&m.ModelsDir, "models", m.ModelsDir, "trained model directories (<signal>/<ZONE>/, <signal>/generic/); absent: baseline and climatology only")
	fs.StringVar(&m.DataDir, "data", m.DataDir, "carbon-intensity data directory (<zone>.csv files or <zone>/ folders); default: the bundled data")
	fs.StringVar(&m.Clock, "clock", m.Clock, "clock: system or replay")
	replay := fs.String("replay-start", m.ReplayStart.Format(time.RFC3339), "replay clock start (RFC 3339)")
	fs.DurationVar(&m.Step, "step", m.Step, "default spacing of candidate start times (at least 1m)")
	fs.DurationVar(&m.Horizon, "horizon", m.Horizon, "forecast horizon (whole hours)")
	fs.DurationVar(&m.DrainDelay, "drain-delay", m.DrainDelay, "on SIGTERM, how long /readyz fails before the server shuts down")
	fs.DurationVar(&m.ShutdownTimeout, "shutdown-timeout", m.ShutdownTimeout, "how long in-flight requests may take to finish at shutdown")
	level := fs.String("log-level", m.LogLevel.String(), "log level: debug, info, warn or error")
	fs.BoolVar(&m.AccessLog, "access-log", m.AccessLog, "log every request")
	fs.StringVar(&m.RoutesFile, "routes", m.RoutesFile, "YAML file of remote OIP model endpoints (- {zone: DE|generic, protocol: rest|grpc, url, model, authority?}); absent: in-process models only")
	fs.DurationVar(&m.RouteRefresh, "route-refresh", m.RouteRefresh, "how often the routes are re-read (a changed endpoint gets a new client; calls in flight finish)")
	fs.DurationVar(&m.UpstreamTimeout, "upstream-timeout", m.UpstreamTimeout, "bound of each remote fallback step, retries of a cold (\"not ready\") model included")
	fs.IntVar(&m.BreakerFailures, "breaker-failures", m.BreakerFailures, "consecutive failures that open an endpoint's circuit breaker")
	fs.DurationVar(&m.BreakerCooldown, "breaker-cooldown", m.BreakerCooldown, "how long an open breaker fails fast before it lets one probe through")
	fs.IntVar(&m.MaxInFlight, "max-inflight", cmp.Or(m.MaxInFlight, httpapi.DefaultMaxInFlight()), "API requests served at once, 64 × GOMAXPROCS by default (probes and metrics not counted); beyond it a request gets 503 with Retry-After at once")
	fs.IntVar(&m.MaxBacklog, "max-backlog", cmp.Or(m.MaxBacklog, httpapi.DefaultMaxBacklog()), "shed API requests with 503 and Retry-After while this many goroutines wait for a CPU (a CPU overload queues requests there, before any handler runs); negative: off")
	fs.IntVar(&m.MaxConns, "max-conns", cmp.Or(m.MaxConns, httpapi.DefaultMaxConns()), "open connections at most, 4096 × GOMAXPROCS by default; at the limit a new connection evicts the one unused longest (silent since accepted, or idle keep-alive), or gets 503 with Retry-After when all are busy")
	fs.Float64Var(&m.ZoneCap.Share, "zone-cap-share", m.ZoneCap.Share, "zone cap: a zone holding more than this share of the decisions of the last --zone-cap-window (and at least --zone-cap-min of them) gets no more; they go to the best zone under the cap (0: off)")
	fs.DurationVar(&m.ZoneCap.Window, "zone-cap-window", cmp.Or(m.ZoneCap.Window, guard.DefaultWindow), "sliding window of the zone cap")
	fs.IntVar(&m.ZoneCap.MinCount, "zone-cap-min", cmp.Or(m.ZoneCap.MinCount, guard.DefaultMinCount), "decisions of the window a zone must hold before the zone cap applies to it")
	m.Discovery.flags(fs)
	m.Registry.flags(fs)
	m.Admission.flags(fs)
	m.Store.flags(fs)
	m.Controller.flags(fs)
	fs.Float64Var(&m.ReplaySpeed, "replay-speed", 1, fmt.Sprintf("with --clock replay, how many times as fast as the wall clock the replay runs (1 to %d; e.g. 360 shows an hour of scheduling in 10 s)", clock.MaxSpeed))
	m.CASDK.flags(fs)
	if err := cfs.Parse(args); err != nil {
		return err
	}
	if err := m.CASDK.check(); err != nil {
		return err
	}
	if err := m.Store.Vendor.check(); err != nil {
		return err
	}
	switch {
	case m.RouteRefresh <= 0:
		return fmt.Errorf("--route-refresh must be positive, got %v", m.RouteRefresh)
	case m.UpstreamTimeout <= 0:
		return fmt.Errorf("--upstream-timeout must be positive, got %v", m.UpstreamTimeout)
	case m.BreakerFailures < 1:
		return fmt.Errorf("--breaker-failures must be at least 1, got %d", m.BreakerFailures)
	case m.BreakerCooldown <= 0:
		return fmt.Errorf("--breaker-cooldown must be positive, got %v", m.BreakerCooldown)
	case m.MaxInFlight < 1:
		return fmt.Errorf("--max-inflight must be at least 1, got %d", m.MaxInFlight)
	case m.MaxConns < 1:
		return fmt.Errorf("--max-conns must be at least 1, got %d", m.MaxConns)
	}
	if err := m.Controller.check(); err != nil {
		return err
	}
	if m.ReplaySpeed != 1 && m.Clock != clock.ModeReplay {
		return fmt.Errorf("--replay-speed needs --clock replay")
	}
	if err := m.ZoneCap.Validate(); err != nil {
		return fmt.Errorf("--zone-cap-*: %s", forecast.ErrorMessage(err))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	t, err := time.Parse(time.RFC3339, *replay)
	if err != nil {
		return fmt.Errorf("--replay-start %q is not an RFC 3339 time", *replay)
	}
	m.ReplayStart = t.UTC()
	if err := m.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level %q: %w", *level, err)
	}
	return nil
}

// Run loads data and models, listens on Addr and starts serving, then
// returns: a bind error surfaces here. Forecasts are warmed in the
// background; /readyz fails until they are.
func (m *Main) Run(ctx context.Context) (err error) {
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	if m.done == nil {
		m.done = make(chan error, 1)
	}
	m.Logger = daemon.NewLogger(m.Stderr, m.LogLevel)
	if m.tracing, err = tracing.Setup(ctx, m.Logger, "carbongate", version.Get().Version); err != nil {
		return err
	}
	clk, err := m.clock()
	if err != nil {
		return err
	}
	m.clk = clk
	if err := m.Admission.load(m.Logger); err != nil {
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
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.Collector("carbongate"),
		healthCollector{reg: &m.Registry, store: &m.Store})
	m.reg = reg
	if m.ModelsDir == "" {
		m.Logger.Warn("no --models directory; serving with the baseline and climatology only")
	}
	src, err := m.routeSource()
	if err != nil {
		return err
	}
	storeHist, err := m.Store.open(m, reg, clk)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.Store.close()
		}
	}()
	bundled := history.New(tables)
	var hist forecast.History = bundled
	if storeHist != nil {
		hist = storeHist
	}
	live, err := m.Registry.open(m, hist)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.Registry.close()
		}
	}()
	m.gw, err = wiring.New(ctx, wiring.Config{
		Registry: live, History: storeHist,
		Tables: tables, Regions: regs, ModelsDir: m.ModelsDir, Clock: clk,
		Horizon: m.Horizon, Step: m.Step, Registerer: reg, Logger: m.Logger,
		Routes: src, RouteRefresh: m.RouteRefresh, UpstreamTimeout: m.UpstreamTimeout,
		Breaker: breaker.Config{Failures: m.BreakerFailures, Cooldown: m.BreakerCooldown},
		ZoneCap: m.ZoneCap,
		Vendor:  m.vendor(), VendorPosition: wiring.VendorPosition(m.Store.Vendor.Position),
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.gw.Close()
		}
	}()
	if err := m.Controller.open(m, clk, reg); err != nil {
		return err
	}
	mount, err := m.Registry.mount(m)
	if err != nil {
		return err
	}
	if mount, err = m.Admission.mount(m, mount); err != nil {
		return err
	}
	mount, casdkDoc, err := m.CASDK.mount(m, mount, bundled, regs)
	if err != nil {
		return err
	}
	m.api, err = httpapi.New(httpapi.Config{
		OpenAPIExtra: [][]byte{m.Admission.openAPI(), casdkDoc},
		Mount:        mount, Routes: m.routes, Checks: mergeChecks(m.Registry.checks, m.Store.checks), MaxInFlight: m.MaxInFlight, MaxBacklog: m.MaxBacklog,
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
	conns := httpapi.NewConnLimit(m.MaxConns, m.Admission.scheme() == "http")
	reg.MustRegister(conns.Collectors()...)
	m.ln = conns.Listener(m.Admission.listener(m.ln))
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
	m.Controller.start(m)
	m.Registry.start()
	m.Store.start(m.Logger)
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
func (m *Main) vendor() wiring.VendorForecaster {
	if m.Store.Vendor.forecaster == nil {
		return nil
	}
	return m.Store.Vendor.forecaster
}

// clock returns the clock of --clock, --replay-start and --replay-speed.
func (m *Main) clock() (clock.Clock, error) {
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
func (m *Main) routeSource() (route.Source, error) {
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

func (m *Main) loadData() (map[forecast.Zone]*dataset.Table, error) {
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
func (m *Main) URL() string {
	addr := m.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return m.Admission.scheme() + "://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// Ready reports whether the forecasts are warm.
func (m *Main) Ready() bool { return m.ready.Load() }

// Done reports a server that stopped on its own with the error.
func (m *Main) Done() <-chan error { return m.done }

// Close drains and shuts down: /readyz fails, Close waits DrainDelay
// (requests are still served), then shuts the server down, waiting at most
// ShutdownTimeout for in-flight requests, and stops the forecast cache.
// Calling Close again returns the first result.
func (m *Main) Close() error {
	m.closeOnce.Do(func() {
		defer func() { m.closeErr = errors.Join(m.closeErr, m.tracing.Close()) }()
		if m.srv == nil {
			m.Registry.close()
			m.Store.close()
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
		m.Controller.close()
		m.Registry.close()
		m.Store.close()
		m.gw.Close()
		m.wg.Wait()
		m.Logger.Info("stopped")
	})
	return m.closeErr
}
