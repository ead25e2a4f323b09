package ingest

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
)

// Outcomes of one upstream request, the values of the "outcome" label.
const (
	OutcomeOK           = "ok"
	OutcomeRateLimited  = "rate_limited" // 429
	OutcomeUnavailable  = "unavailable"  // 5xx, unreachable, timed out
	OutcomeUnauthorized = "unauthorized"
	OutcomeNotFound     = "not_found"
	OutcomeInvalid      = "invalid" // an answer that cannot be read, or a request refused as malformed
	OutcomeCanceled     = "canceled"
	OutcomeError        = "error" // anything else
)

// Reasons a point was dropped, the values of the "reason" label.
const (
	DropDuplicate = "duplicate"    // repeated with the same value
	DropConflict  = "conflict"     // repeated with another value; an older revision was dropped
	DropMissing   = "missing"      // no usable value
	DropPartial   = "incomplete"   // points of hours not completely covered (not stored yet)
	DropOutside   = "out_of_range" // outside the hours asked for
)

// Metrics are the ingestion metrics of a Poller. A nil *Metrics records
// nothing.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	retries  *prometheus.CounterVec
	points   *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	gaps     *prometheus.CounterVec
	latest   *prometheus.GaugeVec
}

// NewMetrics returns Metrics registered with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	feed := []string{"source", "zone", "signal"}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_ingest_requests_total",
			Help: "Requests to carbon-intensity upstreams, by source and outcome.",
		}, []string{"source", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carbongate_ingest_request_duration_seconds",
			Help:    "Time of one request to a carbon-intensity upstream (a login included), by source.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"source"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_ingest_retries_total",
			Help: "Upstream requests retried after a rate limit, a server error or a timeout, by source.",
		}, []string{"source"}),
		points: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_ingest_points_total",
			Help: "Hourly points upserted into the observed-signals store, by source, zone and signal.",
		}, feed),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_ingest_dropped_points_total",
			Help: "Upstream points not stored, by source and reason.",
		}, []string{"source", "reason"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_ingest_gap_hours_total",
			Help: "Hours left as a gap because the source no longer serves them, by source, zone and signal.",
		}, feed),
		latest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "carbongate_ingest_latest_point_timestamp_seconds",
			Help: "Start of the latest stored hour (Unix seconds), by source, zone and signal.",
		}, feed),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.latency, m.retries, m.points, m.dropped, m.gaps, m.latest} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("ingest: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// outcome classifies the result of one request.
func outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	if Status(err) == 429 {
		return OutcomeRateLimited
	}
	switch forecast.ErrorCode(err) {
	case forecast.EUNAVAILABLE:
		return OutcomeUnavailable
	case forecast.EUNAUTHORIZED:
		return OutcomeUnauthorized
	case forecast.ENOTFOUND:
		return OutcomeNotFound
	case forecast.EINVALID:
		return OutcomeInvalid
	}
	return OutcomeError
}

func (m *Metrics) request(source, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(source, outcome).Inc()
	if outcome != OutcomeCanceled {
		m.latency.WithLabelValues(source).Observe(d.Seconds())
	}
}

func (m *Metrics) retry(source string) {
	if m != nil {
		m.retries.WithLabelValues(source).Inc()
	}
}

func (m *Metrics) stored(f Feed, n int, latest time.Time) {
	if m == nil || n == 0 {
		return
	}
	m.points.WithLabelValues(f.Source.Name(), string(f.Zone), string(f.Signal)).Add(float64(n))
	m.latest.WithLabelValues(f.Source.Name(), string(f.Zone), string(f.Signal)).Set(float64(latest.Unix()))
}

func (m *Metrics) drop(source, reason string, n int) {
	if m != nil && n > 0 {
		m.dropped.WithLabelValues(source, reason).Add(float64(n))
	}
}

func (m *Metrics) gap(f Feed, hours int) {
	if m != nil && hours > 0 {
		m.gaps.WithLabelValues(f.Source.Name(), string(f.Zone), string(f.Signal)).Add(float64(hours))
	}
}
