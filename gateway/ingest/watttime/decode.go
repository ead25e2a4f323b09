package watttime

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// response is the answer of /v3/historical and /v3/forecast.
type response struct {
	Data *[]struct {
		PointTime       string   `json:"point_time"`
		Value           *float64 `json:"value"`
		ImputedDataUsed bool     `json:"imputed_data_used"`
		LastUpdated     string   `json:"last_updated"`
	} `json:"data"`
	Meta *struct {
		Region                 string          `json:"region"`
		SignalType             string          `json:"signal_type"`
		Units                  string          `json:"units"`
		DataPointPeriodSeconds int             `json:"data_point_period_seconds"`
		GeneratedAt            string          `json:"generated_at"`
		Model                  json.RawMessage `json:"model"`
		Warnings               json.RawMessage `json:"warnings"`
	} `json:"meta"`
}

// factor returns what turns a value in units into gCO2/kWh.
func factor(units string) (float64, bool) {
	switch units {
	case "lbs_co2_per_mwh":
		return LbsPerMWh, true
	case "kg_co2_per_mwh", "g_co2_per_kwh":
		return 1, true
	}
	return 0, false
}

// convert checks the answer against the request and converts its points:
// times in UTC, values in gCO2/kWh, null or negative values left out and
// counted as missing, imputed values marked estimated.
func (r *response) convert(path, region string) (Data, error) {
	bad := func(format string, args ...any) (Data, error) {
		return Data{}, forecast.Errorf(forecast.EINVALID, "watttime: answer to %s: %s", path, fmt.Sprintf(format, args...))
	}
	if r.Meta == nil {
		return bad("no meta")
	}
	if r.Data == nil {
		return bad("no data array")
	}
	m := r.Meta
	if m.Region != region {
		return bad("meta.region is %q, not %q", m.Region, region)
	}
	if m.SignalType != SignalType {
		return bad("meta.signal_type is %q, not %q", m.SignalType, SignalType)
	}
	f, ok := factor(m.Units)
	if !ok {
		return bad("meta.units %q cannot be converted to gCO2/kWh", m.Units)
	}
	if p := m.DataPointPeriodSeconds; p <= 0 || 3600%p != 0 {
		return bad("meta.data_point_period_seconds %d does not divide an hour", p)
	}
	d := Data{Region: m.Region, Model: modelDate(m.Model), Warnings: warnings(m.Warnings)}
	d.Period = time.Duration(m.DataPointPeriodSeconds) * time.Second
	if m.GeneratedAt != "" {
		t, err := ingest.ParseTime(Name, path+" meta.generated_at", m.GeneratedAt)
		if err != nil {
			return Data{}, err
		}
		d.GeneratedAt = t
	}
	pts := make([]ingest.Point, 0, len(*r.Data))
	for i, e := range *r.Data {
		where := fmt.Sprintf("%s data[%d]", path, i)
		if e.PointTime == "" {
			return bad("data[%d] has no point_time", i)
		}
		t, err := ingest.ParseTime(Name, where+" point_time", e.PointTime)
		if err != nil {
			return Data{}, err
		}
		var updated time.Time
		if e.LastUpdated != "" {
			if updated, err = ingest.ParseTime(Name, where+" last_updated", e.LastUpdated); err != nil {
				return Data{}, err
			}
		}
		if e.Value == nil || *e.Value < 0 {
			d.Missing++
			continue
		}
		pts = append(pts, ingest.Point{Time: t, Value: *e.Value * f, Estimated: e.ImputedDataUsed, UpdatedAt: updated})
	}
	d.Points, d.Duplicates, d.Conflicts = ingest.Normalize(pts)
	return d, nil
}

// modelDate reads meta.model.date; the model is informative, so an
// unexpected shape yields "".
func modelDate(raw json.RawMessage) string {
	var m struct {
		Date string `json:"date"`
	}
	if json.Unmarshal(raw, &m) == nil {
		return m.Date
	}
	return ""
}

// warnings renders meta.warnings ([{type, message}], or strings) as text.
func warnings(raw json.RawMessage) []string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var w struct{ Type, Message string }
		var s string
		switch {
		case json.Unmarshal(it, &s) == nil:
			out = append(out, s)
		case json.Unmarshal(it, &w) == nil:
			out = append(out, strings.TrimPrefix(w.Type+": "+w.Message, ": "))
		}
	}
	return out
}
