package remote

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/gateway/route"
)

// Outcomes of an upstream call, the values of the "outcome" label.
const (
	OutcomeOK          = "ok"           // a valid forecast
	OutcomeTimeout     = "timeout"      // no answer within the deadline
	OutcomeUnavailable = "unavailable"  // down, not ready (after retries), unreachable
	OutcomeBadResponse = "bad_response" // an answer outside the forecaster contract
	OutcomeError       = "error"        // any other upstream error
	OutcomeCircuitOpen = "circuit_open" // failed fast: the endpoint's breaker is open
	OutcomeRejected    = "rejected"     // not sent: the request does not fit the model or has no history
	OutcomeCanceled    = "canceled"     // the caller gave up
)

// Metrics are the upstream metrics of every remote Forecaster of a
// gateway, labelled by endpoint (see Label). A nil *Metrics records nothing.
type Metrics struct {
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	breaker *prometheus.GaugeVec
	retries *prometheus.CounterVec
}

// NewMetrics returns Metrics registered with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_upstream_calls_total",
			Help: "Forecasts asked of remote OIP model endpoints, by endpoint and outcome.",
		}, []string{"endpoint", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carbongate_upstream_call_duration_seconds",
			Help:    "Time to get a forecast from a remote OIP model endpoint, retries included, by endpoint.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"endpoint"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "carbongate_upstream_breaker_state",
			Help: "Circuit breaker state per remote endpoint: 0 closed, 1 half-open, 2 open.",
		}, []string{"endpoint"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_upstream_retries_total",
			Help: "Upstream calls retried after a \"not ready\" answer (cold start), by endpoint.",
		}, []string{"endpoint"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.latency, m.breaker, m.retries} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("remote: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Label names an endpoint in metrics and logs: "DE rest carbon-forecaster-DE@http://host:port",
// "generic grpc carbon-forecaster-generic@host:port".
func Label(e route.Endpoint) string {
	z := string(e.Zone)
	if e.Generic() {
		z = "generic"
	}
	return z + " " + e.Protocol + " " + e.Model + "@" + e.URL
}

// Forget drops the series of an endpoint that is no longer routed.
func (m *Metrics) Forget(label string) {
	if m == nil {
		return
	}
	m.calls.DeletePartialMatch(prometheus.Labels{"endpoint": label})
	m.latency.DeleteLabelValues(label)
	m.breaker.DeleteLabelValues(label)
	m.retries.DeleteLabelValues(label)
}

func (m *Metrics) observe(label, outcome string, seconds float64) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(label, outcome).Inc()
	if outcome != OutcomeCircuitOpen && outcome != OutcomeRejected {
		m.latency.WithLabelValues(label).Observe(seconds)
	}
}

func (m *Metrics) state(label string, s float64) {
	if m != nil {
		m.breaker.WithLabelValues(label).Set(s)
	}
}

func (m *Metrics) retry(label string) {
	if m != nil {
		m.retries.WithLabelValues(label).Inc()
	}
}
