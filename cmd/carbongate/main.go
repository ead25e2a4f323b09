// Command carbongate is the carbon-aware scheduling gateway. The embedded
// default needs no services: bundled data, the cloud region table, trained
// model directories (optional) and a replay clock.
//
//	carbongate --addr :8080 --models DIR --clock replay --replay-start 2021-06-01T00:00:00Z
//
// It maps its flags to the Params of package gateway/runtime, the
// composition root, which documents the modes (KServe discovery, a routes
// file, the registry, the store, the webhook, the controller) and the
// drain on SIGTERM or SIGINT.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/cmd/internal/daemon"
	"github.com/carbongate/carbongate/cmd/internal/version"
	"github.com/carbongate/carbongate/deploy/opa"
	"github.com/carbongate/carbongate/gateway/casdk"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/guard"
	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/runtime"
)

func main() {
	m := NewMain()
	daemon.Exit("carbongate", m, func() *slog.Logger { return m.Logger })
}

// Main is the carbongate program: ParseFlags fills the runtime's Params,
// Run builds and starts the runtime (it returns once the server listens),
// Close drains and shuts it down.
type Main struct {
	runtime.Params
	LogLevel slog.Level
	Stderr   io.Writer // logs; default os.Stderr

	rt *runtime.Runtime
}

// NewMain returns a Main with the documented defaults.
func NewMain() *Main {
	m := &Main{Params: runtime.DefaultParams(), LogLevel: slog.LevelInfo, Stderr: os.Stderr}
	m.Admission.Bundle = opa.Admission{}
	return m
}

// Run builds the logger and the runtime and starts it.
func (m *Main) Run(ctx context.Context) error {
	m.Logger = daemon.NewLogger(cmp.Or[io.Writer](m.Stderr, os.Stderr), m.LogLevel)
	m.Version = version.Get().Version
	m.Collectors = append(m.Collectors, version.Collector("carbongate"))
	m.rt = runtime.New(m.Params)
	return m.rt.Run(ctx)
}

// URL returns the base URL the server listens on (after Run).
func (m *Main) URL() string { return m.rt.URL() }

// Ready reports whether the forecasts are warm.
func (m *Main) Ready() bool { return m.rt.Ready() }

// Done reports a server that stopped on its own with the error.
func (m *Main) Done() <-chan error { return m.rt.Done() }

// Close drains and shuts down (see runtime.Runtime.Close); before Run it
// does nothing.
func (m *Main) Close() error {
	if m.rt == nil {
		return nil
	}
	return m.rt.Close()
}

func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("carbongate", flag.ContinueOnError)
	cfs := cli.Wrap(fs, os.Stdout)
	fs.StringVar(&m.Addr, "addr", m.Addr, "listen address")
	fs.StringVar(&m.ModelsDir, "models", m.ModelsDir, "trained model directories (<signal>/<ZONE>/, <signal>/generic/); absent: baseline and climatology only")
	fs.StringVar(&m.DataDir, "data", m.DataDir, "carbon-intensity data directory (<zone>.csv files or <zone>/ folders); default: the bundled data")
	fs.StringVar(&m.Clock, "clock", m.Clock, "clock: system or replay")
	replay := fs.String("replay-start", m.ReplayStart.Format(time.RFC3339), "replay clock start (RFC 3339)")
	anchor := fs.String("replay-anchor", "", "with --clock replay, the wall-clock instant (RFC 3339) at which the replay reads --replay-start; default: when the process starts. Replicas given the same anchor tell the same time under --replay-speed")
	fs.DurationVar(&m.Step, "step", m.Step, "default spacing of candidate start times (at least 1m)")
	fs.DurationVar(&m.Horizon, "horizon", m.Horizon, "forecast horizon (whole hours)")
	fs.DurationVar(&m.DrainDelay, "drain-delay", m.DrainDelay, "on SIGTERM, how long /readyz fails before the server shuts down")
	fs.DurationVar(&m.ShutdownTimeout, "shutdown-timeout", m.ShutdownTimeout, "how long in-flight requests may take to finish at shutdown")
	level := fs.String("log-level", m.LogLevel.String(), "log level: debug, info, warn or error")
	fs.BoolVar(&m.AccessLog, "access-log", m.AccessLog, "log every request")
	fs.StringVar(&m.RoutesFile, "routes", m.RoutesFile, "YAML file of remote OIP model endpoints (- {zone: DE|generic, protocol: rest|grpc, url, model, authority?}); absent: in-process models only")
	fs.DurationVar(&m.RouteRefresh, "route-refresh", m.RouteRefresh, "how often the routes are re-read (a changed endpoint gets a new client; calls in flight finish)")
	fs.DurationVar(&m.UpstreamTimeout, "upstream-timeout", m.UpstreamTimeout, "bound of each remote fallback step, retries of a cold (\"not ready\") model included")
	fs.IntVar(&m.Breaker.Failures, "breaker-failures", m.Breaker.Failures, "consecutive failures that open an endpoint's circuit breaker")
	fs.DurationVar(&m.Breaker.Cooldown, "breaker-cooldown", m.Breaker.Cooldown, "how long an open breaker fails fast before it lets one probe through")
	fs.IntVar(&m.MaxInFlight, "max-inflight", cmp.Or(m.MaxInFlight, httpapi.DefaultMaxInFlight()), "API requests served at once, 64 × GOMAXPROCS by default (probes and metrics not counted); beyond it a request gets 503 with Retry-After at once")
	fs.IntVar(&m.MaxBacklog, "max-backlog", cmp.Or(m.MaxBacklog, httpapi.DefaultMaxBacklog()), "shed API requests with 503 and Retry-After while this many goroutines wait for a CPU (a CPU overload queues requests there, before any handler runs); negative: off")
	fs.IntVar(&m.MaxConns, "max-conns", cmp.Or(m.MaxConns, httpapi.DefaultMaxConns()), "open connections at most, 4096 × GOMAXPROCS by default; at the limit a new connection evicts the one unused longest (silent since accepted, or idle keep-alive), or gets 503 with Retry-After when all are busy")
	fs.Float64Var(&m.ZoneCap.Share, "zone-cap-share", m.ZoneCap.Share, "zone cap: a zone holding more than this share of the decisions of the last --zone-cap-window (and at least --zone-cap-min of them) gets no more; they go to the best zone under the cap (0: off)")
	fs.DurationVar(&m.ZoneCap.Window, "zone-cap-window", cmp.Or(m.ZoneCap.Window, guard.DefaultWindow), "sliding window of the zone cap")
	fs.IntVar(&m.ZoneCap.MinCount, "zone-cap-min", cmp.Or(m.ZoneCap.MinCount, guard.DefaultMinCount), "decisions of the window a zone must hold before the zone cap applies to it")
	discoveryFlags(fs, &m.Discovery)
	registryFlags(fs, &m.Registry)
	admissionFlags(fs, &m.Admission)
	storeFlags(fs, &m.Store, &m.VendorPosition)
	controllerFlags(fs, &m.Controller)
	fs.Float64Var(&m.ReplaySpeed, "replay-speed", 1, fmt.Sprintf("with --clock replay, how many times as fast as the wall clock the replay runs (1 to %d; e.g. 360 shows an hour of scheduling in 10 s)", clock.MaxSpeed))
	casdkFlags(fs, &m.CASDK)
	if err := cfs.Parse(args); err != nil {
		return err
	}
	// Unlike other variables, an empty $CARBONGATE_CASDK_PREFIX is not
	// unset: it means no prefix, as it always has.
	if v, ok := os.LookupEnv(cli.EnvName("casdk-prefix")); ok && v == "" && m.CASDK.Prefix == casdk.DefaultPrefix {
		m.CASDK.Prefix = ""
	}
	if *anchor != "" { // before Check, which needs it with the clock
		a, err := time.Parse(time.RFC3339Nano, *anchor)
		if err != nil {
			return fmt.Errorf("--replay-anchor %q is not an RFC 3339 time", *anchor)
		}
		m.ReplayAnchor = a.UTC()
	}
	if err := m.Check(); err != nil {
		return err
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
