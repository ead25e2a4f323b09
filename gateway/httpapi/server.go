// Package httpapi serves the gateway over HTTP with Echo: the scheduling
// API (POST /v1/schedule, GET /v1/forecast, GET /v1/zones), health and
// readiness probes, Prometheus metrics and the OpenAPI document. Handlers
// return errors; one error handler renders them.
package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/oip"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the embedded OpenAPI 3.1 document.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

// Limits and defaults.
const (
	MaxBodyBytes          = 64 << 10
	DefaultRequestTimeout = 4 * time.Second // under OPA http.send's 5 s default
	HeaderRequestID       = "X-Request-Id"
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
	// OpenAPIExtra describes the mounted routes: an OpenAPI fragment
	// ({"paths": …, "components": …}) merged into /openapi.json.
	OpenAPIExtra   []byte
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
	Routes []Route
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
	routesBy   labelCache[string, Route]
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
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Pre(headAsGet)
	e.Use(s.middleware, s.body, s.limit)
	e.POST("/v1/schedule", s.schedule)
	e.GET("/v1/forecast", s.forecast)
	e.GET("/v1/zones", s.zones)
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{})))
	e.GET("/openapi.json", s.openapi)
	if cfg.Mount != nil {
		cfg.Mount(e)
	}
	doc, err := mergeOpenAPI(openAPI, cfg.OpenAPIExtra)
	if err != nil {
		return nil, err
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
	for _, r := range s.echo.Routes() {
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
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      s.cfg.RequestTimeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// ---- middleware, errors -------------------------------------------------

const (
	keyRequestID  = "request_id"
	keyWriteError = "write_error"
)

// headAsGet serves HEAD requests with the GET handlers, whose bodies it
// drops: routed as GET, answered as HEAD (the method is restored before
// net/http writes the answer, which a handler's writes never reach).
func headAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodHead {
			return next(c)
		}
		r.Method = http.MethodGet
		defer func() { r.Method = http.MethodHead }()
		c.Response().Writer = headWriter{c.Response().Writer}
		return next(c)
	}
}

// headWriter drops the body of a HEAD answer.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(p []byte) (int, error) { return len(p), nil }

// middleware gives each request an id and a deadline, recovers panics,
// renders errors, and records metrics and the access log.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		t0 := time.Now()
		req := c.Request()
		id := req.Header.Get(HeaderRequestID)
		if !validID(id) {
			id = newID()
		}
		c.Set(keyRequestID, id)
		c.Response().Header().Set(HeaderRequestID, id)
		ctx, cancel := context.WithTimeout(req.Context(), s.cfg.RequestTimeout)
		defer cancel()
		c.SetRequest(req.WithContext(ctx))
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			err = next(c)
		}()
		if err != nil {
			s.handleError(err, c)
		}
		route := c.Path()
		if route == "" || errors.Is(err, echo.ErrNotFound) || errors.Is(err, echo.ErrMethodNotAllowed) {
			route = "unmatched"
		}
		status := c.Response().Status
		el := time.Since(t0)
		s.requestsBy.get(routeCode{route, status}).Inc()
		s.latencyBy.get(route).Observe(el.Seconds())
		// Shed requests are counted, not logged: logging them would add work
		// exactly when there is too much.
		if s.cfg.AccessLog && c.Get(keyShed) == nil {
			attrs := []slog.Attr{slog.String("request_id", id), slog.String("method", req.Method), slog.String("route", route),
				slog.String("path", req.URL.Path), slog.Int("status", status), slog.Int64("bytes", c.Response().Size),
				slog.Float64("duration_ms", float64(el.Microseconds())/1000), slog.String("remote", req.RemoteAddr)}
			if werr, ok := c.Get(keyWriteError).(error); ok {
				attrs = append(attrs, slog.String("write_error", werr.Error()))
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		}
		return nil
	}
}

// validID accepts client request ids of 1 to 128 visible ASCII characters.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

func newID() string { return rand.Text() }

// httpError is an error with an HTTP-only meaning (no route, wrong method,
// body too large, wrong content type).
type httpError struct {
	status        int
	code, message string
}

func (e *httpError) Error() string { return e.code + ": " + e.message }

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[string]int{
	forecast.EINVALID:      http.StatusBadRequest,
	forecast.EINFEASIBLE:   http.StatusUnprocessableEntity,
	forecast.ENOTFOUND:     http.StatusNotFound,
	forecast.ECONFLICT:     http.StatusConflict,
	forecast.EUNAUTHORIZED: http.StatusUnauthorized,
	forecast.EUNAVAILABLE:  http.StatusServiceUnavailable,
	forecast.EINTERNAL:     http.StatusInternalServerError,
}

type errorBody struct {
	Error     errorJSON `json:"error"`
	RequestID string    `json:"request_id"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// handleError renders err as the error body with its status. Unknown
// errors become EINTERNAL with a generic message; their full text is logged
// with the request id.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	id, _ := c.Get(keyRequestID).(string)
	var body errorJSON
	status := http.StatusInternalServerError
	var he *httpError
	var ee *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status, body = he.status, errorJSON{Code: he.code, Message: he.message}
	case errors.As(err, &ee):
		status = ee.Code
		body = errorJSON{Code: echoCode(ee.Code), Message: http.StatusText(ee.Code)}
		if m, ok := ee.Message.(string); ok && m != "" {
			body.Message = m
		}
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
		body = errorJSON{Code: forecast.EUNAVAILABLE, Message: "the request ran out of time"}
	case errors.Is(err, context.Canceled):
		status = http.StatusServiceUnavailable
		body = errorJSON{Code: forecast.EUNAVAILABLE, Message: "the request was canceled"}
	default:
		code := forecast.ErrorCode(err)
		status = statusOf[code]
		if status == 0 {
			code, status = forecast.EINTERNAL, http.StatusInternalServerError
		}
		body = errorJSON{Code: code, Field: forecast.ErrorField(err), Message: forecast.ErrorMessage(err)}
		if code == forecast.EINTERNAL {
			body.Message = "internal error"
		}
	}
	if status >= 500 && c.Get(keyShed) == nil { // shed requests are counted, not logged
		s.log.Error("request failed", "request_id", id, "status", status, "error", err.Error())
	}
	if err := writeJSON(c, status, errorBody{Error: body, RequestID: id}); err != nil {
		c.Set(keyWriteError, err) // the access log says the answer was not delivered
	}
}

func echoCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return forecast.ENOTFOUND
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case http.StatusUnauthorized:
		return forecast.EUNAUTHORIZED
	case http.StatusServiceUnavailable:
		return forecast.EUNAVAILABLE
	}
	if status >= 400 && status < 500 {
		return forecast.EINVALID
	}
	return forecast.EINTERNAL
}

var (
	bufPool   = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	slicePool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}
)

// writeJSON encodes v whole before writing, so that an encoding error is
// reported rather than sent half-written, and the response has a length.
func writeJSON(c echo.Context, status int, v any) error {
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return writeBytes(c, status, buf.Bytes())
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		buf.Reset()
		bufPool.Put(buf)
	}
}

// writeBytes writes a JSON body with its length.
func writeBytes(c echo.Context, status int, b []byte) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(b)
	return err
}

// ---- handlers -----------------------------------------------------------

func (s *Server) schedule(c echo.Context) error {
	req := c.Request()
	ct := req.Header.Get(echo.HeaderContentType)
	mt, err := ct, error(nil)
	if ct != echo.MIMEApplicationJSON { // the usual case needs no parsing
		mt, _, err = mime.ParseMediaType(ct)
	}
	if err != nil || mt != echo.MIMEApplicationJSON {
		return &httpError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
			message: "Content-Type must be application/json"}
	}
	body, _ := Body(c) // read by the body middleware; none: empty
	r, err := DecodeScheduleRequest(body)
	if err != nil {
		return err
	}
	d, err := s.cfg.Service.Schedule(req.Context(), r)
	if err != nil {
		return err
	}
	for _, p := range d.Provenance {
		s.sourcesBy.get(p.Source).Inc()
	}
	for _, c := range d.Capped {
		s.cappedBy.get(c.Zone).Inc()
	}
	out := scheduleResponse(d, c.Get(keyRequestID).(string))
	defer releaseSchedule(out)
	bp := slicePool.Get().(*[]byte)
	b, err := appendSchedule((*bp)[:0], out)
	defer func() {
		if cap(b) <= 64<<10 {
			*bp = b
			slicePool.Put(bp)
		}
	}()
	if err != nil {
		return err
	}
	return writeBytes(c, http.StatusOK, b)
}

func (s *Server) forecast(c echo.Context) error {
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, "query", "malformed query string: %s", forecast.Clip(err.Error(), 80))
	}
	zs := q.Get("zone")
	if zs == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "query parameter zone is required")
	}
	zone, err := forecast.ParseZone(zs)
	if err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "%s", forecast.ErrorMessage(err))
	}
	sig, err := forecast.ParseSignal(q.Get("signal"))
	if err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, "signal", "%s", forecast.ErrorMessage(err))
	}
	fc, now, err := s.cfg.Service.Forecast(c.Request().Context(), zone, sig)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, forecastResponse(fc, now, c.Get(keyRequestID).(string)))
}

func (s *Server) zones(c echo.Context) error {
	zs := s.cfg.Service.Zones()
	out := zonesBody{Zones: make([]zoneJSON, len(zs)), Clock: clockOf(s.cfg.Service.Now()), RequestID: c.Get(keyRequestID).(string)}
	for i, z := range zs {
		zj := zoneJSON{Zone: string(z.Zone), History: z.History, Locations: make([]locationJSON, len(z.Locations)),
			Forecasters: make(map[string]string, len(z.Forecasters))}
		if z.Climatology > 0 {
			v := z.Climatology
			zj.Climatology = &v
		}
		for j, l := range z.Locations {
			zj.Locations[j] = locationJSON{Provider: l.Provider, Region: l.Region}
		}
		for sig, src := range z.Forecasters {
			zj.Forecasters[string(sig)] = string(src)
		}
		out.Zones[i] = zj
	}
	return writeJSON(c, http.StatusOK, out)
}

type statusBody struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

func (s *Server) healthz(c echo.Context) error {
	return writeJSON(c, http.StatusOK, statusBody{Status: "ok"})
}

func (s *Server) readyz(c echo.Context) error {
	if s.draining.Load() {
		return &httpError{status: http.StatusServiceUnavailable, code: forecast.EUNAVAILABLE, message: "draining"}
	}
	if why := s.saturated(); why != "" {
		return &httpError{status: http.StatusServiceUnavailable, code: forecast.EUNAVAILABLE, message: "saturated: " + why}
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			return &httpError{status: http.StatusServiceUnavailable, code: forecast.EUNAVAILABLE, message: "not ready: " + forecast.ErrorMessage(err)}
		}
	}
	body := statusBody{Status: "ready"}
	if s.cfg.Checks != nil {
		body.Checks = s.cfg.Checks()
	}
	return writeJSON(c, http.StatusOK, body)
}

// saturated returns why the server would shed the next request, or "".
func (s *Server) saturated() string {
	// Not the body budget: it sheds only large bodies, and the server
	// still serves the others.
	return s.limiter.saturated()
}

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.openapiDoc)
}
