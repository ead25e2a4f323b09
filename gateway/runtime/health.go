package runtime

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Dependencies, the values of the "dependency" label of
// carbongate_dependency_up.
const (
	depRegistry = "registry"
	depStore    = "store"
)

var (
	dependencyUp = prometheus.NewDesc("carbongate_dependency_up",
		"1 while a configured backing service is reachable, 0 while it is not (what /readyz reports): registry (its database connected and the last read of the alias table succeeded) or store (the observed-signals store connected).",
		[]string{"dependency"}, nil)
	promotionFailed = prometheus.NewDesc("carbongate_registry_promotion_failed",
		"1 while a version the registry alias points at failed to load (the previous version keeps serving; /readyz and the log name it), else 0.",
		nil, nil)
)

// healthCollector reports, at each scrape, the state /readyz reports of
// the registry and the store; a part that is not configured reports
// nothing.
type healthCollector struct {
	reg   *registryPart
	store *storePart
}

var _ prometheus.Collector = healthCollector{}

func (h healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dependencyUp
	ch <- promotionFailed
}

func (h healthCollector) Collect(ch chan<- prometheus.Metric) {
	if h.reg.models != nil {
		st := h.reg.models.Status()
		ch <- prometheus.MustNewConstMetric(dependencyUp, prometheus.GaugeValue, boolValue(h.reg.store.Connected() && st.ReadErr == nil), depRegistry)
		ch <- prometheus.MustNewConstMetric(promotionFailed, prometheus.GaugeValue, boolValue(st.Err != nil))
	}
	if h.store.conn != nil {
		ch <- prometheus.MustNewConstMetric(dependencyUp, prometheus.GaugeValue, boolValue(h.store.conn.err() == nil), depStore)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
