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
	"path/filepath"
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
	"github.com/carbongate/carbongate/gateway/tracing"
	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/registry/follow"
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

// remote is an S3 prefix mirrored into a local directory.
type remote struct {
	uri, dir    string
	fingerprint string
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

// resolveSources applies the /mnt/models default and checks the flags
// agree.
func (m *Main) resolveSources() error {
	if m.Registry.Model != "" {
		if err := m.checkRegistry(); err != nil {
			return err
		}
	} else if m.ModelDir == "" && m.ModelsDir == "" {
		if st, err := m.Stat(KServeModelDir); err == nil && st.IsDir() {
			m.ModelDir = KServeModelDir
		} else {
			return errors.New("no models: give --model_dir, --models or --model (or mount " + KServeModelDir + ")")
		}
	}
	if m.ModelName != "" && m.ModelDir == "" && m.reg == nil {
		return errors.New("--model_name names the model of --model_dir")
	}
	if m.MaxBatch < 1 {
		return fmt.Errorf("--max-batch %d must be at least 1", m.MaxBatch)
	}
	if m.MaxInFlight < 1 {
		return fmt.Errorf("--max-inflight %d must be at least 1", m.MaxInFlight)
	}
	if m.ReloadInterval < 0 {
		return fmt.Errorf("--reload-interval %v must not be negative", m.ReloadInterval)
	}
	return nil
}

func (m *Main) needsS3() bool { return s3.IsURI(m.ModelDir) || s3.IsURI(m.ModelsDir) }

// loadAndWatch fetches and loads the models, reports the outcome on
// Loaded (and Done when nothing could be served), then reloads every
// ReloadInterval until ctx ends.
func (m *Main) loadAndWatch(ctx context.Context) {
	err := m.load(ctx)
	m.loadErr = err
	if err == nil {
		m.startGRPC()
	}
	close(m.loaded)
	if err != nil {
		if ctx.Err() == nil {
			m.done <- fmt.Errorf("loading models: %w", err)
		}
		return
	}
	switch {
	case m.reg != nil:
		m.reg.Run(ctx)
	case m.ReloadInterval > 0:
		m.Backend.Watch(ctx, m.ReloadInterval, m.refetch)
	}
}

// startGRPC serves gRPC on its listener once the first load ended, as
// KServe's and Triton's servers load their models before serving: the
// largest message it receives is derived from the loaded models (see
// grpcMaxMessage), and grpc.Server fixes it at construction. Until then
// gRPC clients connect and wait. It does nothing once Close began.
func (m *Main) startGRPC() {
	m.grpcMu.Lock()
	defer m.grpcMu.Unlock()
	if m.grpcStopped {
		return
	}
	maxMsg := m.grpcMaxMessage()
	m.grpcHealth = oipgrpc.NewHealth(m.backend())
	m.grpcSrv = oipgrpc.NewServer(m.backend(), oipgrpc.ServerLogger(m.Logger), oipgrpc.ServerGate(m.gate), oipgrpc.ServerMaxMessageSize(maxMsg),
		oipgrpc.ServerHealth(m.grpcHealth), oipgrpc.ServerGRPCOptions(tracing.ServerOptions()...))
	srv, ln := m.grpcSrv, m.grpcLn
	m.wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.done <- fmt.Errorf("grpc: %w", err)
		}
	})
	m.Logger.Info("grpc serving", "grpc", ln.Addr().String(), "max_message_bytes", maxMsg)
}

// grpcMaxMessage is the largest ModelInfer request of the loaded models at
// --max-batch rows (oip.Limits.MaxBinaryBytes: raw contents are exact,
// packed FP32 4 bytes a value), and at least the response of the largest
// (forecast, lower and upper FP32 at 4 bytes a value), so that one limit
// serves both directions. A model reloaded with a longer lookback can take
// larger messages than this until carbonserve restarts: requests above it
// get ResourceExhausted.
func (m *Main) grpcMaxMessage() int {
	n := int64(oip.RequestOverheadBytes)
	for _, st := range m.Backend.Models() {
		if !st.Ready {
			continue
		}
		lim, err := m.Backend.InferLimits(context.Background(), st.Name, "")
		if err != nil {
			continue
		}
		out := int64(oip.RequestOverheadBytes) + 3*4*int64(m.MaxBatch)*int64(st.Meta.Horizon)
		n = max(n, lim.MaxBinaryBytes(), out)
	}
	return int(n)
}

func (m *Main) load(ctx context.Context) error {
	if m.reg != nil {
		return m.loadRegistry(ctx)
	}
	var srcs []serve.Source
	for _, root := range []string{m.ModelDir, m.ModelsDir} {
		if root == "" {
			continue
		}
		dir := root
		if s3.IsURI(root) {
			var err error
			if dir, err = m.fetch(ctx, root); err != nil {
				return err
			}
		}
		found, err := serve.Discover(dir, m.Signal)
		if err != nil {
			return err
		}
		if root == m.ModelDir && m.ModelName != "" {
			if len(found) != 1 {
				return fmt.Errorf("--model_name %q needs one model in --model_dir, found %d", m.ModelName, len(found))
			}
			found[0].Name = m.ModelName
		}
		srcs = append(srcs, found...)
	}
	var errs []error
	for _, src := range srcs {
		name, err := m.Backend.Add(ctx, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(src.Dir), err))
			m.Logger.Error("model not loaded", "model", name, "dir", filepath.Base(src.Dir), "error", err)
		}
	}
	if len(errs) == len(srcs) {
		return errors.Join(errs...)
	}
	return nil // the models that failed stay not ready; Reload retries them
}

// fetch mirrors uri into a directory of the cache and returns it.
func (m *Main) fetch(ctx context.Context, uri string) (string, error) {
	if m.CacheDir == "" {
		tmp, err := os.MkdirTemp("", "carbonserve-")
		if err != nil {
			return "", err
		}
		m.CacheDir, m.tmpCache = tmp, tmp
	}
	r := &remote{uri: uri, dir: filepath.Join(m.CacheDir, fmt.Sprintf("remote-%d", len(m.remotes)))}
	fctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
	defer cancel()
	t0 := time.Now()
	res, err := s3.Fetch(fctx, m.s3c, uri, r.dir)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", uri, err)
	}
	r.fingerprint = res.Fingerprint
	m.remotes = append(m.remotes, r)
	m.Logger.Info("fetched models", "uri", uri, "objects", res.Objects, "bytes", res.Bytes, "elapsed_ms", time.Since(t0).Milliseconds())
	return r.dir, nil
}

// refetch downloads each S3 prefix again when its listing changed; Reload
// then swaps in the models whose MLmodel changed.
func (m *Main) refetch(ctx context.Context) error {
	var errs []error
	for _, r := range m.remotes {
		fctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
		fp, err := s3.Stat(fctx, m.s3c, r.uri)
		if err == nil && fp != r.fingerprint {
			var res s3.Result
			if res, err = s3.Fetch(fctx, m.s3c, r.uri, r.dir); err == nil {
				r.fingerprint = res.Fingerprint
				m.Logger.Info("fetched changed models", "uri", r.uri, "objects", res.Objects, "bytes", res.Bytes)
			}
		}
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.uri, err))
		}
	}
	return errors.Join(errs...)
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

// stopGRPC stops the gRPC server gracefully within ctx, or closes its
// listener when it never started serving; after it startGRPC does nothing.
func (m *Main) stopGRPC(ctx context.Context) {
	m.grpcMu.Lock()
	srv, ln, health := m.grpcSrv, m.grpcLn, m.grpcHealth
	m.grpcStopped = true
	m.grpcMu.Unlock()
	if srv == nil {
		ln.Close()
		return
	}
	health.Shutdown() // health watchers would hold GracefulStop
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		srv.Stop()
		<-stopped
	}
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
