// Package evaluate scores the forecasts of the forecast store (written by
// carbonctl backfill) against observed signals: MAPE and MAE per lead day
// with the median and p90 across issued forecasts, interval coverage, and
// error by lead hour, per (zone, signal, model_name, model_version). It
// also stitches a week of forecasts for plots and compares two versions of
// a model on the same window for the promotion gate.
//
// Lead hour h of a forecast issued at T is the hour T+h; lead day d (1, 2,
// …) is lead hours 24(d−1) … 24d−1.
package evaluate

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// DefaultLeadDays is the number of lead days scored when a Selection does
// not say: 4, a 96-hour horizon.
const DefaultLeadDays = 4

// Key identifies the forecasts of one model version for one zone and
// signal: one row of a report.
type Key struct {
	Zone         forecast.Zone   `json:"zone"`
	Signal       forecast.Signal `json:"signal"`
	ModelName    string          `json:"model_name"`
	ModelVersion string          `json:"model_version"`
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Signal, b.Signal),
		cmp.Compare(a.ModelName, b.ModelName), compareVersions(a.ModelVersion, b.ModelVersion))
}

// compareVersions orders numeric versions numerically (2 before 10), then
// other names lexically.
func compareVersions(a, b string) int {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return cmp.Compare(len(a), len(b))
	}
	return cmp.Compare(a, b)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// Issue is one issued forecast: its first LeadDays×24 hours indexed by
// lead hour. Hours the store does not hold are NaN; Lower and Upper are NaN
// where the row had no interval.
type Issue struct {
	At                  time.Time
	Value, Lower, Upper []float64
}

// Selection says which forecast rows to read.
type Selection struct {
	// Query is passed to the store: zones, signal, an exact model name and
	// version, and the issue-time range [IssuedFrom, IssuedTo).
	Query store.ForecastQuery
	// ModelPrefix, when set, keeps only model names that start with it
	// (Query.ModelName must then be empty).
	ModelPrefix string
	// Versions, when set, keeps only these model versions.
	Versions []string
	// LeadDays is the number of lead days kept and scored; 0 means
	// DefaultLeadDays. Rows further ahead are not kept.
	LeadDays int
}

// Set is forecasts read from the store, grouped by Key, each key's issues
// in increasing time order.
type Set struct {
	LeadDays int
	Issues   map[Key][]Issue
}

// Keys returns the set's keys in report order: zone, signal, model name,
// then version (numeric versions numerically).
func (s *Set) Keys() []Key {
	ks := make([]Key, 0, len(s.Issues))
	for k := range s.Issues {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compareKeys)
	return ks
}

// Signals returns the signals of the set's keys, sorted.
func (s *Set) Signals() []forecast.Signal {
	var out []forecast.Signal
	for k := range s.Issues {
		if !slices.Contains(out, k.Signal) {
			out = append(out, k.Signal)
		}
	}
	slices.Sort(out)
	return out
}

// Load reads the rows sel selects from fs into a Set. EINVALID (field
// "lead_days" or "model") for a bad selection; store errors are returned
// as they come. An empty result is not an error: the Set has no keys.
func Load(ctx context.Context, fs store.Forecasts, sel Selection) (*Set, error) {
	days := sel.LeadDays
	if days == 0 {
		days = DefaultLeadDays
	}
	if days < 0 || days > 30 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "lead_days", "lead days %d is not between 1 and 30", sel.LeadDays)
	}
	if sel.ModelPrefix != "" && sel.Query.ModelName != "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "model", "a model prefix and an exact model name cannot both be given")
	}
	q := sel.Query
	if len(sel.Versions) == 1 {
		q.ModelVersion = sel.Versions[0]
	}
	span := days * forecast.HoursPerDay
	set := &Set{LeadDays: days, Issues: map[Key][]Issue{}}
	index := map[Key]map[int64]int{} // issue time → position in set.Issues[k]
	err := fs.ReadForecasts(ctx, q, func(r store.ForecastRow) error {
		if !strings.HasPrefix(r.ModelName, sel.ModelPrefix) ||
			(len(sel.Versions) > 0 && !slices.Contains(sel.Versions, r.ModelVersion)) {
			return nil
		}
		lead := int(r.TargetTime.Sub(r.IssuedAt) / forecast.Hour)
		if lead < 0 || lead >= span {
			return nil
		}
		k := Key{r.Zone, r.Signal, r.ModelName, r.ModelVersion}
		at := r.IssuedAt.UTC()
		pos, ok := index[k][at.Unix()]
		if !ok {
			if index[k] == nil {
				index[k] = map[int64]int{}
			}
			pos = len(set.Issues[k])
			index[k][at.Unix()] = pos
			set.Issues[k] = append(set.Issues[k], newIssue(at, span))
		}
		is := set.Issues[k][pos]
		is.Value[lead], is.Lower[lead], is.Upper[lead] = r.Value, r.Lower, r.Upper
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k, is := range set.Issues {
		slices.SortFunc(is, func(a, b Issue) int { return a.At.Compare(b.At) })
		set.Issues[k] = is
	}
	return set, nil
}

// Common returns the set with, per zone and signal, only the issue times
// that every key of that zone and signal has: its models (carbongate's and
// a vendor's, stored hourly) are then scored on the same issues. The issues
// are shared with set, not copied.
func Common(set *Set) *Set {
	type series struct {
		zone   forecast.Zone
		signal forecast.Signal
	}
	keys := map[series]int{}
	count := map[series]map[int64]int{}
	for k, is := range set.Issues {
		sk := series{k.Zone, k.Signal}
		keys[sk]++
		if count[sk] == nil {
			count[sk] = map[int64]int{}
		}
		for _, i := range is {
			count[sk][i.At.Unix()]++
		}
	}
	out := &Set{LeadDays: set.LeadDays, Issues: make(map[Key][]Issue, len(set.Issues))}
	for k, is := range set.Issues {
		sk := series{k.Zone, k.Signal}
		var kept []Issue
		for _, i := range is {
			if count[sk][i.At.Unix()] == keys[sk] {
				kept = append(kept, i)
			}
		}
		if len(kept) > 0 {
			out.Issues[k] = kept
		}
	}
	return out
}

func newIssue(at time.Time, span int) Issue {
	is := Issue{At: at, Value: make([]float64, span), Lower: make([]float64, span), Upper: make([]float64, span)}
	for i := range span {
		is.Value[i], is.Lower[i], is.Upper[i] = math.NaN(), math.NaN(), math.NaN()
	}
	return is
}

// Observations gives observed hourly values: zone's signal over [from, to)
// as a series starting at from, NaN where nothing was observed.
// store.Observed implements it; SeriesFunc adapts in-memory series.
type Observations interface {
	Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error)
}

var _ Observations = (store.Observed)(nil)

// SeriesFunc serves observations from whole in-memory series (a dataset):
// it returns zone's series of signal, and false when there is none.
type SeriesFunc func(zone forecast.Zone, signal forecast.Signal) (forecast.Series, bool)

// Observed implements Observations: hours outside the series are NaN.
func (f SeriesFunc) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	if err := ctx.Err(); err != nil {
		return forecast.Series{}, err
	}
	from, to = forecast.HourFloor(from), forecast.HourFloor(to)
	if to.Before(from) {
		return forecast.Series{}, forecast.FieldErrorf(forecast.EINVALID, "to", "to %s is before from %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	out := forecast.Series{Start: from, Values: make([]float64, int(to.Sub(from)/forecast.Hour))}
	s, ok := f(zone, signal)
	for i := range out.Values {
		v, in := math.NaN(), false
		if ok {
			v, in = s.At(from.Add(time.Duration(i) * forecast.Hour))
		}
		if !in {
			v = math.NaN()
		}
		out.Values[i] = v
	}
	return out, nil
}
