// Package httpapi serves the gateway over HTTP with Echo: the scheduling
// API (POST /v1/schedule, GET /v1/forecast, GET /v1/zones), health and
// readiness probes, Prometheus metrics and the OpenAPI document. Handlers
// return errors; one error handler renders them.
package httpapi

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/internal/tracing"
	"github.com/carbongate/carbongate/oip"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the embedded OpenAPI 3.1 document.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

// Limits and defaults.
const (
	MaxBodyBytes = 64 << 10
	// MaxHeaderBytes bounds a request's line and headers: beyond, 431 in
	// the route's error document. net/http refuses (with a 431 of its own)
	// only beyond twice as many, so that routes with their own error
	// document (the Carbon Aware SDK's) answer in it.
	MaxHeaderBytes        = 64 << 10
	DefaultRequestTimeout = 4 * time.Second // under OPA http.send's 5 s default
)

// Service is what the HTTP layer needs of the gateway; *gateway.Service
// implements it.
type Service interface {
	Schedule(ctx context.Context, req gateway.Request) (gateway.Decision, error)
	Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (forecast.Forecast, gateway.Reading, error)
	Zones() []gateway.ZoneInfo
	Now() gateway.Reading
}

var _ Service = (*gateway.Service)(nil)

// Config configures a Server.
type Config struct {
	Service Service              // required
	Logger  *slog.Logger         // access and error logs; nil: discard
	Metrics *prometheus.Registry // registry served at /metrics and receiving the HTTP metrics; required
	// Ready reports whether the server should receive traffic (e.g. the
	// forecast cache is warm); nil: always. Draining overrides it.
	Ready func() error
	// Checks, when set, adds named notes to /readyz's body about parts that
	// are degraded but do not stop the server from answering (e.g. the
	// registry is unreachable and the last loaded models keep serving).
	Checks func() map[string]string
	// Mount, when set, registers more routes (e.g. the MLflow registry
	// API) behind the same middleware: request ids, metrics, access log.
	Mount func(e *echo.Echo)
	// OpenAPIExtra describes the mounted routes: OpenAPI fragments
	// ({"paths": …, "components": …}) merged into /openapi.json; nil
	// fragments are skipped.
	OpenAPIExtra   [][]byte
	RequestTimeout time.Duration // default DefaultRequestTimeout
	// AccessLog turns per-request access logs on.
	AccessLog bool
	// MaxInFlight bounds the requests inside handlers (all routes but
	// /healthz, /readyz and /metrics); beyond it a request gets 503 with
	// code unavailable and Retry-After at once, and counts in
	// carbongate_http_shed_total. 0: DefaultMaxInFlight; negative: error.
	MaxInFlight int
	// MaxBacklog sheds requests the same way while this many goroutines of
	// the process wait for a CPU (the Go scheduler's run queues, read at
	// most once per millisecond): under a CPU overload requests queue
	// there, before their handler runs. 0: DefaultMaxBacklog; negative:
	// off.
	MaxBacklog int
	// Routes sets the body limit and the shed answer of mounted routes
	// (the scheduling API's take MaxBodyBytes and the plain 503).
	Routes []httpedge.Route
	// BodyBudget bounds the bytes of request bodies held beyond
	// FreeBodyBytes each, while they are read and served; a request whose
	// body finds it spent is shed. 0: DefaultBodyBudget; negative: error.
	BodyBudget int64
}

// Server is the HTTP API. It implements http.Handler.
type Server struct {
	cfg      Config
	echo     *echo.Echo
	log      *slog.Logger
	draining atomic.Bool
	limiter  *limiter
	budget   *oip.BodyBudget
	// openapiDoc is the document served at /openapi.json: the embedded
	// one plus Config.OpenAPIExtra.
	openapiDoc []byte

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	sources  *prometheus.CounterVec
	capped   *prometheus.CounterVec

	// The children of the vectors above, looked up once per label values
	// rather than per request.
	requestsBy labelCache[routeCode, prometheus.Counter]
	latencyBy  labelCache[string, prometheus.Observer]
	sourcesBy  labelCache[forecast.Source, prometheus.Counter]
	cappedBy   labelCache[forecast.Zone, prometheus.Counter]
	routesBy   labelCache[string, httpedge.Route]
}

// routeCode labels carbongate_http_requests_total.
type routeCode struct {
	route string
	code  int
}

// labelCache remembers the children of a metric vector by label values,
// up to maxCached of them (label values are routes, status codes and
// fallback steps: a handful); get creates the child with make on a miss.
type labelCache[K comparable, M any] struct {
	make func(K) M
	mu   sync.RWMutex
	m    map[K]M
}

const maxCached = 256

func (c *labelCache[K, M]) get(k K) M {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = c.make(k)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[K]M)
	}
	if len(c.m) < maxCached {
		c.m[k] = v
	}
	c.mu.Unlock()
	return v
}

// New returns a Server with every route registered.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil || cfg.Metrics == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "httpapi: Service and Metrics are required")
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxInFlight < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "max_inflight", "httpapi: MaxInFlight must not be negative, got %d", cfg.MaxInFlight)
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight()
	}
	if cfg.MaxBacklog == 0 {
		cfg.MaxBacklog = DefaultMaxBacklog()
	}
	if cfg.BodyBudget < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "body_budget", "httpapi: BodyBudget must not be negative, got %d", cfg.BodyBudget)
	}
	if cfg.BodyBudget == 0 {
		cfg.BodyBudget = DefaultBodyBudget()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, limiter: newLimiter(cfg.MaxInFlight, cfg.MaxBacklog), budget: oip.NewBodyBudget(cfg.BodyBudget, FreeBodyBytes),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_http_requests_total", Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "carbongate_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		sources: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_decision_forecast_sources_total", Help: "Forecasts used by scheduling decisions, by fallback step.",
		}, []string{"source"}),
		capped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_decision_zone_capped_total", Help: "Scheduling decisions steered away from a zone over the zone cap, by that zone.",
		}, []string{"zone"}),
	}
	s.requestsBy.make = func(k routeCode) prometheus.Counter {
		return s.requests.WithLabelValues(k.route, strconv.Itoa(k.code))
	}
	s.latencyBy.make = func(route string) prometheus.Observer { return s.latency.WithLabelValues(route) }
	s.sourcesBy.make = func(src forecast.Source) prometheus.Counter { return s.sources.WithLabelValues(string(src)) }
	s.cappedBy.make = func(z forecast.Zone) prometheus.Counter { return s.capped.WithLabelValues(string(z)) }
	s.routesBy.make = s.matchRoute
	for _, c := range []prometheus.Collector{s.requests, s.latency, s.sources, s.capped, s.limiter.shed, s.limiter.inflight} {
		if err := cfg.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("httpapi: register metrics: %w", err)
		}
	}
	e := echo.NewWithConfig(echo.Config{Logger: s.log, HTTPErrorHandler: s.handleError})
	e.Pre(headAsGet)
	e.Use(s.middleware, s.body, s.limit)
	e.POST("/v1/schedule", s.schedule)
	e.GET("/v1/forecast", s.forecast)
	e.GET("/v1/zones", s.zones)
	e.GET("/v1/instance-types", s.instanceTypes)
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{})))
	e.GET("/openapi.json", s.openapi)
	if cfg.Mount != nil {
		cfg.Mount(e)
	}
	doc, err := openAPI, error(nil)
	for _, frag := range cfg.OpenAPIExtra {
		if doc, err = mergeOpenAPI(doc, frag); err != nil {
			return nil, err
		}
	}
	s.openapiDoc = doc
	s.echo = e
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Routes lists the registered routes as "METHOD path".
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.echo.Router().Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// Drain makes /readyz fail from now on, so that load balancers stop
// sending traffic before the server shuts down.
func (s *Server) Drain() { s.draining.Store(true) }

// HTTPServer returns an http.Server for s with read, write and idle
// timeouts set.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           tracing.Handler(s, "carbongate"),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      s.cfg.RequestTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    2 * MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
