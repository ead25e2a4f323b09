package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/models/ledger"
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
	// staged counts held workloads readied ahead of their release
	// (stage.go).
	staged *prometheus.CounterVec

	// The ledger (ledger.go).
	realizedAvoided, realizedAdded, realizedPromised *prometheus.CounterVec
	ledgerWorkloads                                  *prometheus.CounterVec

	// Re-decisions (redecide.go).
	redecisions, redecisionGain *prometheus.CounterVec

	mu   sync.Mutex
	held map[string]map[string]struct{} // kind → keys of the workloads held
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_releases_total",
			Help: "Held workloads released, by kind (job, pod, resourcebinding, vmtemplate) and reason (scheduled, deadline-guard, manual, invalid, unscheduled, expired).",
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
			Help: "Held workloads released while no node of their decided region could take their pods (NotReady, unreachable, cordoned or tainted nodes, or none): their pods wait Pending; or ResourceBindings released to a member cluster that is not Ready or tainted: Karmada leaves them unscheduled. By kind (job, pod, resourcebinding).",
		}, []string{"kind"}),
		staged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_staged_total",
			Help: "Held workloads readied ahead of their release, by kind: ResourceBindings let Karmada schedule them (--karmada-schedule-ahead) while their dispatch stays held.",
		}, []string{"kind"}),
		realizedAvoided: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_realized_avoided_grams_total",
			Help: "gCO2eq released workloads really avoided, charged at observed intensity: running at admission minus the run, summed over workloads whose shift saved (those that lost are in carbongate_realized_added_grams_total), by workload_namespace and mode (enforce; shadow: what enforcing would have avoided).",
		}, []string{"workload_namespace", "mode"}),
		realizedAdded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_realized_added_grams_total",
			Help: "gCO2eq released workloads emitted beyond running at admission, at observed intensity (shifts that lost), by workload_namespace and mode; net realized saving = carbongate_realized_avoided_grams_total − this.",
		}, []string{"workload_namespace", "mode"}),
		realizedPromised: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_realized_promised_grams_total",
			Help: "gCO2eq the forecast promised (carbongate.io/avoided-g) for the workloads counted in the realized counters, to compare like for like, by workload_namespace and mode.",
		}, []string{"workload_namespace", "mode"}),
		ledgerWorkloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_realized_workloads_total",
			Help: "Held workloads whose ledger account is closed, by workload_namespace, mode and status: realized, partial (some hours never observed), no-power (declares none), deleted (before it ran), gone (deleted after it ran, before its hours were observed).",
		}, []string{"workload_namespace", "mode", "status"}),
		redecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_redecisions_total",
			Help: "Held workloads re-decided on a newer forecast, by kind, outcome (moved: the hold's start or place changed; kept: no window beat it by the threshold; failed: the gateway or the patch failed) and move (of a moved one: time, place or place-and-time; unavailable: moved off a decided place that could not take it at its staging or release; empty otherwise).",
		}, []string{"kind", "outcome", "move"}),
		redecisionGain: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbongate_controller_redecision_gain_grams_total",
			Help: "gCO2eq the moves of held workloads are estimated to save under the newer forecast (its held start minus its new start, workloads that declare carbongate.io/power-watts), by workload_namespace.",
		}, []string{"workload_namespace"}),
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
		reg.MustRegister(m.releases, m.lag, m.leader, m.avoided, m.unplaceable, m.staged, held,
			m.realizedAvoided, m.realizedAdded, m.realizedPromised, m.ledgerWorkloads, m.redecisions, m.redecisionGain)
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

// recorded counts a recorded ledger entry of a workload of namespace ns.
func (m *metrics) recorded(ns, mode string, e ledger.Entry) {
	m.ledgerWorkloads.WithLabelValues(ns, mode, string(e.Status)).Inc()
	if e.Status != ledger.Realized {
		return
	}
	if a := *e.AvoidedGrams; a >= 0 {
		m.realizedAvoided.WithLabelValues(ns, mode).Add(a)
	} else {
		m.realizedAdded.WithLabelValues(ns, mode).Add(-a)
	}
	if e.HasPromise {
		m.realizedPromised.WithLabelValues(ns, mode).Add(e.PromisedGrams)
	}
}
