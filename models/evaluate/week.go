package evaluate

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Trace is one key's forecast next to the observations, hour by hour from
// Start: what a forecast-vs-observed plot draws. Value, Lower and Upper
// are NaN where no forecast covers the hour (Lower/Upper also where the
// model gave no interval); Observed is NaN where nothing was observed.
type Trace struct {
	Key
	Start                         time.Time
	Observed, Value, Lower, Upper []float64
}

// HasInterval reports whether some hour of t has an interval.
func (t Trace) HasInterval() bool {
	for i := range t.Lower {
		if !math.IsNaN(t.Lower[i]) && !math.IsNaN(t.Upper[i]) {
			return true
		}
	}
	return false
}

// Week stitches, for each key of set in zone (every zone when ""), the
// forecasts covering days days from start (hour-aligned) by their day-1
// hours: hour t takes the value of the latest forecast issued at or before
// t with t − issued_at < 24 h. With daily issues at 00:00 that is each
// day's own day-ahead forecast, the one a scheduler would have used. Keys
// with no forecast in the window are left out.
func Week(ctx context.Context, set *Set, obs Observations, zone forecast.Zone, start time.Time, days int) ([]Trace, error) {
	start = forecast.HourFloor(start)
	n := days * forecast.HoursPerDay
	if days < 1 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "days", "a week plot needs at least one day, not %d", days)
	}
	end := start.Add(time.Duration(n) * forecast.Hour)
	observed := map[Key]forecast.Series{}
	var out []Trace
	for _, k := range set.Keys() {
		if zone != "" && k.Zone != zone {
			continue
		}
		t := Trace{Key: k, Start: start, Value: nans(n), Lower: nans(n), Upper: nans(n)}
		found := false
		for _, is := range set.Issues[k] { // increasing At: later issues overwrite
			if !is.At.Before(end) || !is.At.Add(forecast.HoursPerDay*forecast.Hour).After(start) {
				continue
			}
			for lead := range min(forecast.HoursPerDay, len(is.Value)) {
				i := int(is.At.Add(time.Duration(lead)*forecast.Hour).Sub(start) / forecast.Hour)
				if i < 0 || i >= n || math.IsNaN(is.Value[lead]) {
					continue
				}
				t.Value[i], t.Lower[i], t.Upper[i] = is.Value[lead], is.Lower[lead], is.Upper[lead]
				found = true
			}
		}
		if !found {
			continue
		}
		ok := Key{Zone: k.Zone, Signal: k.Signal}
		s, have := observed[ok]
		if !have {
			var err error
			if s, err = obs.Observed(ctx, k.Zone, k.Signal, start, end); err != nil {
				return nil, err
			}
			observed[ok] = s
		}
		t.Observed = s.Values
		out = append(out, t)
	}
	return out, nil
}

func nans(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}
