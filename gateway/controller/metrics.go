package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the controller's Prometheus metrics.
type metrics struct {
	releases *prometheus.CounterVec
	lag      *prometheus.HistogramVec
	leader   prometheus.Gauge
	avoided  *prometheus.CounterVec
	// unplaceable counts releases no node of the decided region could
	// take at once (warnUnplaceable).
	unplaceable *prometheus.CounterVec

	mu   sync.Mutex
	held map[string]map[string]struct{} // kind → keys of the workloads held
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_releases_total",
			Help: "Held workloads released, by kind (job, pod, vmtemplate) and reason (scheduled, deadline-guard, manual, invalid, unscheduled, expired).",
		}, []string{"kind", "reason"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carbongate_controller_release_lag_seconds",
			Help:    "Wall-clock seconds from a workload's release time to its release.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "carbongate_controller_leader",
			Help: "1 while this replica holds the controller's Lease (only the leader releases).",
		}),
		avoided: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_avoided_grams_total",
			Help: "Estimated gCO2eq avoided by workloads released at their decided start, against running at once in the cluster's region (workloads that declare carbongate.io/power-watts), by the workload's namespace (workload_namespace: a scrape's own namespace label would clash).",
		}, []string{"workload_namespace"}),
		unplaceable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_released_unplaceable_total",
			Help: "Held workloads released while no node of their decided region could take their pods (NotReady, unreachable, cordoned or tainted nodes, or none): their pods wait Pending. By kind (job, pod).",
		}, []string{"kind"}),
		held: map[string]map[string]struct{}{},
	}
	for _, kind := range []string{"job", "pod"} { // exported from 0, for increase() and the alert
		m.unplaceable.WithLabelValues(kind)
	}
	if reg != nil {
		held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "carbongate_controller_held_workloads",
			Help: "Workloads this replica waits to release (all kinds; only the leader holds any).",
		}, func() float64 { return float64(m.count()) })
		reg.MustRegister(m.releases, m.lag, m.leader, m.avoided, m.unplaceable, held)
	}
	return m
}

// hold records key as held; it reports whether it was not before.
func (m *metrics) hold(kind, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[kind] == nil {
		m.held[kind] = map[string]struct{}{}
	}
	_, had := m.held[kind][key]
	m.held[kind][key] = struct{}{}
	return !had
}

func (m *metrics) forget(kind, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.held[kind], key)
}

func (m *metrics) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, keys := range m.held {
		n += len(keys)
	}
	return n
}

func (m *metrics) released(kind, reason string, lag time.Duration) {
	m.releases.WithLabelValues(kind, reason).Inc()
	if lag >= 0 {
		m.lag.WithLabelValues(kind).Observe(lag.Seconds())
	}
}
