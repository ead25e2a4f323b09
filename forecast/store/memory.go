package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Memory is an in-memory Forecasts and Observed store, for tests and the
// embedded mode. Safe for concurrent use; create it with NewMemory.
type Memory struct {
	mu        sync.RWMutex
	forecasts map[Key]ForecastRow
	done      map[string]map[Unit]bool
	observed  map[seriesKey]map[int64]Observation // by Unix second of the hour
}

type seriesKey struct {
	zone   forecast.Zone
	signal forecast.Signal
}

var (
	_ Forecasts = (*Memory)(nil)
	_ Observed  = (*Memory)(nil)
)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{
		forecasts: map[Key]ForecastRow{},
		done:      map[string]map[Unit]bool{},
		observed:  map[seriesKey]map[int64]Observation{},
	}
}

// WriteForecasts implements Forecasts; a bad row makes the whole call
// EINVALID and stores nothing.
func (m *Memory) WriteForecasts(ctx context.Context, job string, units []Unit, rows []ForecastRow) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range rows {
		if err := ValidateRow(r); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rows {
		r.IssuedAt, r.TargetTime = r.IssuedAt.UTC(), r.TargetTime.UTC()
		m.forecasts[r.Key()] = r
	}
	d := m.done[job]
	if d == nil {
		d = map[Unit]bool{}
		m.done[job] = d
	}
	for _, u := range units {
		d[Unit{u.Zone, u.IssuedAt.UTC()}] = true
	}
	return nil
}

// Done implements Forecasts.
func (m *Memory) Done(ctx context.Context, job string) ([]Unit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Unit, 0, len(m.done[job]))
	for u := range m.done[job] {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Unit) int {
		return cmp.Or(cmp.Compare(a.Zone, b.Zone), a.IssuedAt.Compare(b.IssuedAt))
	})
	return out, nil
}

// ReadForecasts implements Forecasts.
func (m *Memory) ReadForecasts(ctx context.Context, q ForecastQuery, fn func(ForecastRow) error) error {
	m.mu.RLock()
	rows := make([]ForecastRow, 0, len(m.forecasts))
	for _, r := range m.forecasts {
		if q.matches(r) {
			rows = append(rows, r)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(rows, compareRows)
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func compareRows(a, b ForecastRow) int {
	return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.ModelName, b.ModelName),
		cmp.Compare(a.ModelVersion, b.ModelVersion), a.IssuedAt.Compare(b.IssuedAt),
		a.TargetTime.Compare(b.TargetTime), cmp.Compare(a.Signal, b.Signal))
}

func (q ForecastQuery) matches(r ForecastRow) bool {
	switch {
	case len(q.Zones) > 0 && !slices.Contains(q.Zones, r.Zone),
		q.Signal != "" && q.Signal != r.Signal,
		q.ModelName != "" && q.ModelName != r.ModelName,
		q.ModelVersion != "" && q.ModelVersion != r.ModelVersion,
		!q.IssuedFrom.IsZero() && r.IssuedAt.Before(q.IssuedFrom),
		!q.IssuedTo.IsZero() && !r.IssuedAt.Before(q.IssuedTo):
		return false
	}
	return true
}

// UpsertObserved implements Observed.
func (m *Memory) UpsertObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal, obs []Observation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateObservations(zone, signal, obs); err != nil {
		return err
	}
	if len(obs) == 0 {
		return nil // nothing stored: the series stays unknown, as in the database stores
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := seriesKey{zone, signal}
	s := m.observed[k]
	if s == nil {
		s = map[int64]Observation{}
		m.observed[k] = s
	}
	for _, o := range obs {
		o.Time = o.Time.UTC()
		s[o.Time.Unix()] = o
	}
	return nil
}

// LatestObserved implements Observed.
func (m *Memory) LatestObserved(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var latest int64
	found := false
	for t := range m.observed[seriesKey{zone, signal}] {
		if !found || t > latest {
			latest, found = t, true
		}
	}
	if !found {
		return time.Time{}, false, nil
	}
	return time.Unix(latest, 0).UTC(), true, nil
}

// Observed implements Observed.
func (m *Memory) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	if err := ctx.Err(); err != nil {
		return forecast.Series{}, err
	}
	out, err := MissingSeries(from, to)
	if err != nil {
		return out, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.observed[seriesKey{zone, signal}]
	for i := range out.Values {
		if o, ok := s[out.Start.Add(time.Duration(i)*forecast.Hour).Unix()]; ok {
			out.Values[i] = o.Value
		}
	}
	return out, nil
}

// Last implements forecast.History: ENOTFOUND when nothing of zone's signal
// is stored, EUNAVAILABLE when one of the n hours is missing.
func (m *Memory) Last(ctx context.Context, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	m.mu.RLock()
	_, known := m.observed[seriesKey{zone, signal}]
	m.mu.RUnlock()
	if !known {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "store: no observations of zone %s signal %s", zone, signal)
	}
	end = forecast.HourFloor(end)
	s, err := m.Observed(ctx, zone, signal, end.Add(-time.Duration(n)*forecast.Hour), end)
	if err != nil {
		return nil, err
	}
	return CompleteHistory(zone, signal, s)
}
