// Command carbonserve is an Open Inference Protocol (KServe v2) model server
// for carbongate's forecasting models: REST and gRPC on separate ports,
// many models by name, batches of B ≥ 1, per-model readiness, Prometheus
// metrics on /metrics, and hot reload of model directories. It is a valid
// KServe custom ServingRuntime container (see README.md).
//
//	carbonserve --model_dir DIR|s3://bucket/prefix [--model_name NAME]
//	            [--models DIR|s3://...] [--http_port 8080] [--grpc_port 8081]
//	            [--reload-interval 30s]
//	carbonserve --model models:/NAME@ALIAS [--registry-uri URL] [...]
//
// On SIGTERM or SIGINT it drains: readiness fails, it waits --drain-delay
// for load balancers to notice, then stops both servers within
// --shutdown-timeout, letting in-flight requests finish.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/cmd/internal/daemon"
	"github.com/carbongate/carbongate/cmd/internal/version"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/tracing"
	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/models/serve/follow"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/registry/s3"
)

func main() {
	m := NewMain()
	daemon.Exit("carbonserve", m, func() *slog.Logger { return m.Logger })
}

// KServeModelDir is where KServe's storage initializer puts the model of
// an InferenceService's storageUri.
const KServeModelDir = "/mnt/models"

// Main is the carbonserve program: ParseFlags, then Run (which returns
// once both ports listen; models load in the background), then Close
// (which drains and shuts down).
type Main struct {
	ModelDir  string // one model dir, or a tree (see Models), or s3://; default KServeModelDir when it exists
	ModelName string // serve the one model of ModelDir under this name
	ModelsDir string // a tree of model dirs (<signal>/<ZONE>/ or flat), or s3://
	Signal    forecast.Signal
	Host      string // bind address of both ports ("" = all interfaces)
	HTTPPort  int
	GRPCPort  int
	MaxBatch  int
	// MaxInFlight bounds the infer requests being served at once, REST and
	// gRPC together (default DefaultMaxInFlight); beyond it requests are
	// shed at once with 503 + Retry-After or Unavailable.
	MaxInFlight int
	// ReloadInterval is how often model directories are re-read (and S3
	// prefixes re-listed) for new versions; 0 disables reloading.
	ReloadInterval  time.Duration
	FetchTimeout    time.Duration // bound of one S3 download
	CacheDir        string        // where S3 models are downloaded ("" = a temp dir removed by Close)
	S3              s3.Config
	DrainDelay      time.Duration
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	Stderr          io.Writer           // logs; default os.Stderr
	Getenv          func(string) string // default os.Getenv
	Stat            func(string) (os.FileInfo, error)

	// Registry is --model models:/…: serve a registered model version
	// and follow it (registry.go).
	Registry RegistryConfig

	Logger  *slog.Logger
	Backend *serve.Server

	httpLn, grpcLn net.Listener
	httpSrv        *http.Server
	gate           *oip.Gate
	grpcMu         sync.Mutex
	grpcSrv        *grpc.Server    // set once the first load ended (startGRPC)
	grpcHealth     *oipgrpc.Health // grpcSrv's health service
	grpcStopped    bool            // by Close: startGRPC does nothing
	s3c            *minio.Client
	tmpCache       string
	remotes        []*remote
	reg            *follow.Follower // registry mode, set by Run
	stop           context.CancelFunc
	loaded         chan struct{}
	loadErr        error
	wg             sync.WaitGroup
	done           chan error
	closeOnce      sync.Once
	closeErr       error
	tracing        *tracing.Tracing
}

// InFlightPerCPU sets the default in-flight limit: DefaultMaxInFlight is
// InFlightPerCPU × GOMAXPROCS.
//
// Why 4: inference is CPU work (a batch of 1,024 rows of a production ridge
// model takes a few milliseconds), so more requests in flight than cores
// only queue; 4 per core keeps every core busy while other admitted
// requests read their bodies or write their answers. The limit is also what
// bounds memory: an admitted request holds at most its body (the model's
// JSON limit, about 5.6 MB at L = 168 and 1,024 rows) and a few times its
// decoded tensors, about 15 MB at the largest, so 8 slots on 2 cores hold
// at most about 120 MB of requests.
const InFlightPerCPU = 4

// DefaultMaxInFlight is InFlightPerCPU × GOMAXPROCS.
func DefaultMaxInFlight() int { return InFlightPerCPU * runtime.GOMAXPROCS(0) }

// NewMain returns a Main with the documented defaults.
func NewMain() *Main {
	return &Main{
		Signal:          forecast.SignalLifecycle,
		HTTPPort:        8080,
		GRPCPort:        8081,
		MaxBatch:        serve.DefaultMaxBatch,
		MaxInFlight:     DefaultMaxInFlight(),
		ReloadInterval:  30 * time.Second,
		FetchTimeout:    2 * time.Minute,
		DrainDelay:      5 * time.Second,
		ShutdownTimeout: 20 * time.Second,
		LogLevel:        slog.LevelInfo,
		Stderr:          os.Stderr,
		Getenv:          os.Getenv,
		Stat:            os.Stat,
	}
}

// ParseFlags reads the command line (and the environment KServe sets) into
// m. Flag names with underscores are KServe's model-server conventions.
// The HTTP port defaults to $PORT when set (Knative sets it) and 8080
// otherwise; S3 settings default to the environment KServe's credential
// builder injects (see s3.ConfigFromEnv).
func (m *Main) ParseFlags(args []string) error {
	if m.Getenv == nil {
		m.Getenv = os.Getenv
	}
	if p := m.Getenv("PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("$PORT %q is not a port number", p)
		}
		m.HTTPPort = n
	}
	m.S3 = s3.ConfigFromEnv(m.Getenv)
	fs := flag.NewFlagSet("carbonserve", flag.ContinueOnError)
	cfs := cli.Wrap(fs, os.Stdout)
	cfs.Getenv = m.Getenv
	fs.StringVar(&m.ModelDir, "model_dir", m.ModelDir, "a model directory (MLmodel + files), a tree of them, or s3://bucket/prefix; default "+KServeModelDir+" when it exists")
	fs.StringVar(&m.ModelName, "model_name", m.ModelName, "name to serve the single model of --model_dir under (KServe passes the InferenceService name); default: its registered name")
	fs.StringVar(&m.ModelsDir, "models", m.ModelsDir, "a tree of model directories (<signal>/<ZONE>/ as carbonctl train writes, or flat), or s3://bucket/prefix")
	signal := fs.String("signal", string(m.Signal), "with a <signal>/<ZONE>/ tree, the signal whose models to serve")
	fs.StringVar(&m.Host, "host", m.Host, "bind address of both ports (default all interfaces)")
	fs.IntVar(&m.HTTPPort, "http_port", m.HTTPPort, "REST port (OIP v2 + /metrics); default $PORT or 8080; 0 = any free port")
	fs.IntVar(&m.GRPCPort, "grpc_port", m.GRPCPort, "gRPC port (GRPCInferenceService); 0 = any free port")
	fs.IntVar(&m.MaxBatch, "max-batch", m.MaxBatch, "largest batch B accepted by infer; with each model's lookback it sets the largest request body (REST) and message (gRPC)")
	fs.IntVar(&m.MaxInFlight, "max-inflight", m.MaxInFlight, "infer requests served at once (REST and gRPC together); beyond it 503 + Retry-After / Unavailable at once")
	fs.DurationVar(&m.ReloadInterval, "reload-interval", m.ReloadInterval, "how often to look for new model versions (0 = never)")
	fs.DurationVar(&m.FetchTimeout, "fetch-timeout", m.FetchTimeout, "deadline of one S3 download")
	fs.StringVar(&m.CacheDir, "cache-dir", m.CacheDir, "where S3 models are downloaded (default: a temporary directory)")
	fs.StringVar(&m.S3.Endpoint, "s3-endpoint", m.S3.Endpoint, "S3 endpoint host:port or URL (default $AWS_ENDPOINT_URL or $S3_ENDPOINT)")
	fs.BoolVar(&m.S3.Secure, "s3-tls", m.S3.Secure, "use TLS for a host:port S3 endpoint (default: $S3_USE_HTTPS != 0)")
	fs.StringVar(&m.S3.Region, "s3-region", m.S3.Region, "S3 region (default $AWS_REGION)")
	fs.DurationVar(&m.DrainDelay, "drain-delay", m.DrainDelay, "on SIGTERM, how long readiness fails before the servers stop")
	fs.DurationVar(&m.ShutdownTimeout, "shutdown-timeout", m.ShutdownTimeout, "how long in-flight requests may take to finish at shutdown")
	m.registryFlags(fs)
	level := fs.String("log-level", m.LogLevel.String(), "log level: debug, info, warn or error")
	if err := cfs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	sig, err := forecast.ParseSignal(*signal)
	if err != nil {
		return fmt.Errorf("--signal: %s", forecast.ErrorMessage(err))
	}
	m.Signal = sig
	if err := m.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level %q: %w", *level, err)
	}
	return nil
}

// Run validates the configuration, listens on both ports, starts serving
// and returns: a bind error surfaces here. Models are fetched and loaded in
// the background; until each is loaded it is not ready (and the server is
// not ready). Loaded reports the outcome.
func (m *Main) Run(ctx context.Context) (err error) {
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	if m.Stat == nil {
		m.Stat = os.Stat
	}
	m.done = make(chan error, 2)
	m.loaded = make(chan struct{})
	m.Logger = daemon.NewLogger(m.Stderr, m.LogLevel)
	if m.tracing, err = tracing.Setup(ctx, m.Logger, "carbonserve", version.Get().Version); err != nil {
		return err
	}
	if err := m.resolveSources(); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.Collector("carbonserve"))
	m.Backend, err = serve.New(serve.Config{ServerVersion: buildVersion(), MaxBatch: m.MaxBatch, Metrics: reg, Logger: m.Logger})
	if err != nil {
		return err
	}
	if m.needsS3() {
		if m.s3c, err = s3.NewClient(m.S3); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			m.closeListeners()
		}
	}()
	if m.httpLn, err = net.Listen("tcp", net.JoinHostPort(m.Host, strconv.Itoa(m.HTTPPort))); err != nil {
		return err
	}
	if m.grpcLn, err = net.Listen("tcp", net.JoinHostPort(m.Host, strconv.Itoa(m.GRPCPort))); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	m.gate = oip.NewGate(m.MaxInFlight)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "carbonserve_infer_inflight", Help: "Infer requests being served (REST and gRPC), at most --max-inflight.",
	}, func() float64 { return float64(m.gate.InFlight()) }))
	mux.Handle("/", rest.NewHandler(m.backend(), rest.WithLogger(m.Logger), rest.WithGate(m.gate),
		rest.WithBodyBudget(oip.NewBodyBudget(BodyBudgetPerCPU*int64(runtime.GOMAXPROCS(0)), freeBodyBytes))))
	base := context.WithoutCancel(ctx)
	m.httpSrv = &http.Server{
		Handler:           tracing.Handler(mux, "carbonserve"),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	m.wg.Go(func() {
		if err := m.httpSrv.Serve(m.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.done <- fmt.Errorf("http: %w", err)
		}
	})
	lctx, cancel := context.WithCancel(base)
	m.stop = cancel
	m.wg.Go(func() { m.loadAndWatch(lctx) })
	m.wg.Go(func() { m.returnMemory(lctx) })
	m.Logger.Info("carbonserve listening", "http", m.httpLn.Addr().String(), "grpc", m.grpcLn.Addr().String(),
		"model_dir", m.ModelDir, "models", m.ModelsDir, "model", m.Registry.Model, "model_name", m.ModelName, "reload_interval", m.ReloadInterval.String())
	return nil
}

// Loaded is closed once the first load of the models ended; LoadErr then
// tells whether any model could be loaded.
func (m *Main) Loaded() <-chan struct{} { return m.loaded }

// LoadErr returns the first load's error (after Loaded is closed).
func (m *Main) LoadErr() error { <-m.loaded; return m.loadErr }

// BodyBudgetPerCPU sizes the bytes of infer bodies held at once beyond
// freeBodyBytes each (oip.BodyBudget), × GOMAXPROCS: bodies are read
// before they take an in-flight slot, so that slow clients hold none,
// and this bounds what they hold instead. 32 MiB holds five of the
// largest valid requests (batch 1,024 of a 168-hour history, 5.6 MB as
// JSON) per core.
const BodyBudgetPerCPU = 32 << 20

// freeBodyBytes of each body are read without the budget: a single
// forecast request is a few KiB.
const freeBodyBytes = 64 << 10

// HTTPAddr and GRPCAddr return the addresses the servers listen on (after
// Run), with 127.0.0.1 for an unspecified host.
func (m *Main) HTTPAddr() string { return dialable(m.httpLn.Addr()) }

// GRPCAddr: see HTTPAddr.
func (m *Main) GRPCAddr() string { return dialable(m.grpcLn.Addr()) }

func dialable(a net.Addr) string {
	t := a.(*net.TCPAddr)
	host := t.IP.String()
	if t.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(t.Port))
}

// Done reports a server that stopped on its own, or a first load that
// loaded nothing.
func (m *Main) Done() <-chan error { return m.done }

// Close drains and shuts down: readiness fails, Close waits DrainDelay
// (requests are still served), stops reloading, then stops both servers,
// waiting at most ShutdownTimeout for in-flight requests. Calling Close
// again returns the first result.
func (m *Main) Close() error {
	m.closeOnce.Do(func() {
		defer func() { m.closeErr = errors.Join(m.closeErr, m.tracing.Close()) }()
		if m.httpSrv == nil {
			m.closeListeners()
			return
		}
		m.Backend.Drain()
		m.Logger.Info("draining", "delay", m.DrainDelay.String())
		time.Sleep(m.DrainDelay)
		m.stop()
		ctx, cancel := context.WithTimeout(context.Background(), m.ShutdownTimeout)
		defer cancel()
		var wg sync.WaitGroup
		wg.Go(func() { m.stopGRPC(ctx) })
		if err := m.httpSrv.Shutdown(ctx); err != nil {
			m.closeErr = fmt.Errorf("shutdown: %w", err)
			m.httpSrv.Close()
		}
		wg.Wait()
		m.wg.Wait()
		if m.tmpCache != "" {
			os.RemoveAll(m.tmpCache)
		}
		m.Logger.Info("stopped")
	})
	return m.closeErr
}

func (m *Main) closeListeners() {
	for _, ln := range []net.Listener{m.httpLn, m.grpcLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
