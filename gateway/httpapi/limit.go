package httpapi

import (
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// InFlightPerCPU sets the default in-flight limit: DefaultMaxInFlight is
// InFlightPerCPU × GOMAXPROCS.
//
// Why 64: a scheduling request over cached forecasts costs about 40 µs of
// CPU, so 64 requests per core in flight is about 2.5 ms of queued work per
// core, well inside the 5 ms p99 goal and far from the 4 s request timeout;
// requests that wait rather than compute (a forecast being recomputed, a
// registry query) wait together on one computation per (zone, signal), so
// they need few slots. Each in-flight request holds at most a 64 KiB body
// and its response, so the limit also bounds the memory requests hold: 128
// slots on 2 cores are a few MiB.
const InFlightPerCPU = 64

// BacklogPerCPU sets the default backlog limit: DefaultMaxBacklog is
// BacklogPerCPU × GOMAXPROCS goroutines waiting for a CPU.
//
// Why 512: a scheduling request costs about 50 µs of CPU end to end (HTTP
// included), so 512 waiting per core is about 25 ms of queued work: enough
// to ride out bursts and garbage collections without shedding, small
// enough that a CPU overload is shed long before clients time out. A lower
// limit sheds requests the CPU could still have served in time (128 per
// core shed 61% of a load the gateway served whole, in BenchmarkOverload).
const BacklogPerCPU = 512

// RetryAfter is the Retry-After, in seconds, of a request shed for overload.
const RetryAfter = 1

// DefaultMaxInFlight is the in-flight limit used when Config.MaxInFlight is
// 0: InFlightPerCPU × GOMAXPROCS.
func DefaultMaxInFlight() int { return InFlightPerCPU * runtime.GOMAXPROCS(0) }

// DefaultMaxBacklog is the backlog limit used when Config.MaxBacklog is 0:
// BacklogPerCPU × GOMAXPROCS.
func DefaultMaxBacklog() int { return BacklogPerCPU * runtime.GOMAXPROCS(0) }

// limited reports whether the in-flight limit applies to route: to all but
// the probes and metrics, which must answer under overload, or the
// orchestrator restarts a process that is only busy and monitoring goes
// blind when it matters.
func limited(route string) bool {
	switch route {
	case "/healthz", "/readyz", "/metrics":
		return false
	}
	return true
}

// Reasons a request is shed, the label of carbongate_http_shed_total.
const (
	shedInFlight = "inflight" // max requests inside handlers
	shedBacklog  = "backlog"  // max goroutines waiting for a CPU
)

// limiter sheds requests at once by two measures of load:
//
//   - requests inside handlers, at most cap(slots): this catches requests
//     that wait (on a forecast, a database) and bounds the memory they hold;
//   - goroutines waiting for a CPU, at most maxBacklog, read from the Go
//     scheduler at most once per backlogEvery: when the CPU is the
//     bottleneck, requests queue there, before any handler runs (each
//     connection's goroutine waits to read its next request), while
//     handlers, once running, finish at once; so the first measure alone
//     never sees a CPU overload.
//
// There is no wait queue: admitted requests already share the CPU, so they
// are the queue; a request that waited for a slot would only see its
// latency grow while the client's own deadline runs out. Shedding costs a
// few microseconds and no body read, so a shed request frees the CPU for
// the admitted ones.
type limiter struct {
	slots      chan struct{}
	maxBacklog int64 // < 0: off

	backlog   atomic.Int64 // last reading of the runnable goroutines
	readAt    atomic.Int64 // when, in nanoseconds since start
	start     time.Time
	readMu    sync.Mutex   // serialises readings
	read      func() int64 // reads the runnable goroutines
	noBacklog bool         // off, or the runtime does not report runnable goroutines

	shed     *prometheus.CounterVec
	shedBy   [4]prometheus.Counter // inflight, backlog, bodies, answers
	inflight prometheus.Gauge
}

const (
	backlogMetric = "/sched/goroutines/runnable:goroutines"
	backlogEvery  = time.Millisecond
)

func newLimiter(maxInFlight, maxBacklog int) *limiter {
	l := &limiter{
		slots:      make(chan struct{}, maxInFlight),
		maxBacklog: int64(maxBacklog),
		start:      time.Now(),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_http_shed_total",
			Help: "API requests shed for overload (503 and Retry-After, or the route's own answer such as an AdmissionReview), by reason: inflight (requests in handlers at the limit), backlog (goroutines waiting for a CPU at the limit) bodies (request bodies being read at the body budget) or answers (a large answer's data that the body budget could not hold).",
		}, []string{"reason"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "carbongate_http_inflight_requests",
			Help: "API requests being served (probes and metrics excepted).",
		}),
	}
	l.shedBy[0] = l.shed.WithLabelValues(shedInFlight)
	l.shedBy[1] = l.shed.WithLabelValues(shedBacklog)
	l.shedBy[2] = l.shed.WithLabelValues(shedBodies)
	l.shedBy[3] = l.shed.WithLabelValues(shedAnswers)
	sample := []metrics.Sample{{Name: backlogMetric}}
	metrics.Read(sample)
	l.noBacklog = maxBacklog < 0 || sample[0].Value.Kind() != metrics.KindUint64
	l.read = func() int64 { // called under readMu
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	l.readAt.Store(-int64(backlogEvery))
	return l
}

// runnable returns the goroutines waiting for a CPU, as read at most
// backlogEvery ago.
func (l *limiter) runnable() int64 {
	now := int64(time.Since(l.start))
	if now-l.readAt.Load() < int64(backlogEvery) || !l.readMu.TryLock() {
		return l.backlog.Load()
	}
	defer l.readMu.Unlock()
	n := l.read()
	l.backlog.Store(n)
	l.readAt.Store(now)
	return n
}

// overloaded is the error of a shed request.
func overloaded(limit int, what string) error {
	return forecast.Errorf(forecast.EUNAVAILABLE, "overloaded: %d %s; retry after %d s", limit, what, RetryAfter)
}

// saturated returns why the limiter would shed the next request, or "".
func (l *limiter) saturated() string {
	switch {
	case len(l.slots) == cap(l.slots):
		return "all " + strconv.Itoa(cap(l.slots)) + " request slots in use"
	case !l.noBacklog && l.runnable() >= l.maxBacklog:
		return strconv.Itoa(int(l.maxBacklog)) + " goroutines waiting for a CPU"
	}
	return ""
}

// limit is the middleware that applies the limiter to every route but the
// probes and metrics. A shed request gets 503 with code unavailable and
// Retry-After, or its route's own answer (Route.Shed).
func (s *Server) limit(next echo.HandlerFunc) echo.HandlerFunc {
	l := s.limiter
	retry := strconv.Itoa(RetryAfter)
	return func(c *echo.Context) error {
		if !limited(c.Path()) {
			return next(c)
		}
		if !l.noBacklog && l.runnable() >= l.maxBacklog {
			l.shedBy[1].Inc()
			c.Response().Header().Set("Retry-After", retry)
			return s.shed(c, s.route(c.Path()), overloaded(int(l.maxBacklog), "goroutines waiting for a CPU"))
		}
		select {
		case l.slots <- struct{}{}:
		default:
			l.shedBy[0].Inc()
			c.Response().Header().Set("Retry-After", retry)
			return s.shed(c, s.route(c.Path()), overloaded(cap(l.slots), "requests in flight"))
		}
		l.inflight.Inc()
		defer func() {
			l.inflight.Dec()
			<-l.slots
		}()
		return next(c)
	}
}

// shed answers a request shed for reason: with the route's Shed when it
// has one, else with reason. Either way the request is counted, not
// logged.
func (s *Server) shed(c *echo.Context, rt httpedge.Route, reason error) error {
	httpedge.MarkShed(c)
	if rt.Shed == nil {
		return reason
	}
	return rt.Shed(c, reason)
}
