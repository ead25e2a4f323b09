package evaluate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// Metric names. A lead-day metric is <measure>_d<day>[_<stat>]:
//
//	mape_d1         mean over scored issues of each issue's day-1 MAPE (%)
//	mape_d1_median  median of the same per-issue values
//	mape_d1_p90     their 90th percentile
//	mae_d1…         the same for the mean absolute error (signal unit)
//	coverage_d1     share of day-1 hours inside [lower, upper]
//	width_d1        mean upper − lower over day-1 hours
//
// and coverage and width over every scored hour. Lower is better for every
// metric except coverage (compare it with the nominal level instead).
const (
	MeasureMAPE     = "mape"
	MeasureMAE      = "mae"
	MeasureCoverage = "coverage"
	MeasureWidth    = "width"
)

// MetricNames returns every metric name for days lead days, in report
// order.
func MetricNames(days int) []string {
	var out []string
	for _, m := range []string{MeasureMAPE, MeasureMAE} {
		for d := 1; d <= days; d++ {
			base := fmt.Sprintf("%s_d%d", m, d)
			out = append(out, base, base+"_median", base+"_p90")
		}
	}
	for _, m := range []string{MeasureCoverage, MeasureWidth} {
		for d := 1; d <= days; d++ {
			out = append(out, fmt.Sprintf("%s_d%d", m, d))
		}
		out = append(out, m)
	}
	return out
}

// metricRef is a parsed metric name.
type metricRef struct {
	measure string
	day     int    // 1-based; 0 for the all-hours coverage and width
	stat    string // "", "median" or "p90"
}

// ParseMetric checks that name is a metric of a report with days lead
// days: EINVALID naming field "metric" otherwise.
func ParseMetric(name string, days int) error {
	_, err := parseMetric(name, days)
	return err
}

func parseMetric(name string, days int) (metricRef, error) {
	bad := func(why string) (metricRef, error) {
		return metricRef{}, fmtMetricError(name, days, why)
	}
	if name == MeasureCoverage || name == MeasureWidth {
		return metricRef{measure: name}, nil
	}
	parts := strings.Split(name, "_")
	if len(parts) < 2 || len(parts) > 3 {
		return bad("")
	}
	r := metricRef{measure: parts[0]}
	switch r.measure {
	case MeasureMAPE, MeasureMAE, MeasureCoverage, MeasureWidth:
	default:
		return bad("")
	}
	d, err := strconv.Atoi(strings.TrimPrefix(parts[1], "d"))
	if !strings.HasPrefix(parts[1], "d") || err != nil || d < 1 {
		return bad("")
	}
	if d > days {
		return bad(fmt.Sprintf(" (only %d lead days are scored)", days))
	}
	r.day = d
	if len(parts) == 3 {
		if (parts[2] != "median" && parts[2] != "p90") || r.measure == MeasureCoverage || r.measure == MeasureWidth {
			return bad("")
		}
		r.stat = parts[2]
	}
	return r, nil
}

func fmtMetricError(name string, days int, why string) error {
	return forecast.FieldErrorf(forecast.EINVALID, "metric", "metric %q is not known%s: use e.g. mape_d1, mape_d1_median, mape_d1_p90, mae_d%d, coverage_d1 or coverage", name, why, days)
}

// Metric returns r's value of metric name (see MetricNames): NaN when
// nothing was scored. EINVALID for an unknown name.
func (r Result) Metric(name string) (float64, error) {
	ref, err := parseMetric(name, len(r.Days))
	if err != nil {
		return math.NaN(), err
	}
	if ref.day == 0 {
		if ref.measure == MeasureCoverage {
			return r.Coverage, nil
		}
		return r.Width, nil
	}
	d := r.Days[ref.day-1]
	var s Stat
	switch ref.measure {
	case MeasureCoverage:
		return d.Coverage, nil
	case MeasureWidth:
		return d.Width, nil
	case MeasureMAPE:
		s = d.MAPE
	default:
		s = d.MAE
	}
	switch ref.stat {
	case "median":
		return s.Median, nil
	case "p90":
		return s.P90, nil
	}
	return s.Mean, nil
}

// Metrics returns every metric of r by name (MetricNames).
func (r Result) Metrics() map[string]float64 {
	out := map[string]float64{}
	for _, n := range MetricNames(len(r.Days)) {
		v, _ := r.Metric(n) // every name of MetricNames parses
		out[n] = v
	}
	return out
}
