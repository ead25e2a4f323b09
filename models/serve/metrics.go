package serve

import (
	"github.com/prometheus/client_golang/prometheus"
)

// unknownModel labels requests for a model that is not served, so that
// arbitrary names from clients cannot grow the label set.
const unknownModel = "_unknown"

// metrics are the server's collectors:
//
//	carbonserve_infer_requests_total{model,status}  status "ok" or an error code
//	carbonserve_infer_duration_seconds{model}        Infer latency
//	carbonserve_infer_batch_size{model}              B of successful requests
//	carbonserve_model_ready{model}                   1 when a version is loaded
//	carbonserve_model_info{model,version}            1 for the served version
//	carbonserve_model_loads_total{model,result}      loads and reloads, ok|error
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	batch    *prometheus.HistogramVec
	ready    *prometheus.GaugeVec
	info     *prometheus.GaugeVec
	reloads  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbonserve_infer_requests_total", Help: "Infer calls by model and status (ok or the error code).",
		}, []string{"model", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "carbonserve_infer_duration_seconds", Help: "Time spent in Infer, transport excluded.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10),
		}, []string{"model"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "carbonserve_infer_batch_size", Help: "Batch size B of successful Infer calls.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}, []string{"model"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "carbonserve_model_ready", Help: "1 when the model has a loaded version, 0 while it loads or failed to.",
		}, []string{"model"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "carbonserve_model_info", Help: "1 for the version each model serves.",
		}, []string{"model", "version"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carbonserve_model_loads_total", Help: "Model loads and reloads that swapped a version in (ok) or failed (error).",
		}, []string{"model", "result"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.latency, m.batch, m.ready, m.info, m.reloads} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
