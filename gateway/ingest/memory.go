package ingest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// MemorySink is a Sink that keeps the points in memory, for tests and the
// embedded mode. It also serves them as a forecast.History. Safe for
// concurrent use; the zero value is not usable, call NewMemorySink.
type MemorySink struct {
	mu     sync.RWMutex
	series map[seriesKey]map[int64]Point // by Unix hour start
}

type seriesKey struct {
	zone   forecast.Zone
	signal forecast.Signal
}

var (
	_ Sink             = (*MemorySink)(nil)
	_ forecast.History = (*MemorySink)(nil)
)

// NewMemorySink returns an empty MemorySink.
func NewMemorySink() *MemorySink {
	return &MemorySink{series: map[seriesKey]map[int64]Point{}}
}

// Upsert implements Sink. A point that is not on the hour, or whose value
// is not finite or negative, makes the whole call EINVALID (nothing is
// stored).
func (s *MemorySink) Upsert(ctx context.Context, zone forecast.Zone, signal forecast.Signal, points []Point) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if zone == "" || !validSignal(signal) {
		return forecast.Errorf(forecast.EINVALID, "memory sink: zone %q signal %q", zone, signal)
	}
	for _, p := range points {
		if t := p.Time.UTC(); !t.Equal(t.Truncate(forecast.Hour)) {
			return forecast.Errorf(forecast.EINVALID, "memory sink: point at %s is not on the hour", p.Time.Format(time.RFC3339))
		}
		if !finite(p.Value) || p.Value < 0 {
			return forecast.Errorf(forecast.EINVALID, "memory sink: point at %s has value %v", p.Time.Format(time.RFC3339), p.Value)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := seriesKey{zone, signal}
	m := s.series[k]
	if m == nil {
		m = map[int64]Point{}
		s.series[k] = m
	}
	for _, p := range points {
		p.Time, p.UpdatedAt = p.Time.UTC(), p.UpdatedAt.UTC()
		m[p.Time.Unix()] = p
	}
	return nil
}

// Latest implements Sink.
func (s *MemorySink) Latest(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.series[seriesKey{zone, signal}]
	if len(m) == 0 {
		return time.Time{}, false, nil
	}
	var last int64
	first := true
	for t := range m {
		if first || t > last {
			last, first = t, false
		}
	}
	return time.Unix(last, 0).UTC(), true, nil
}

// Points returns the stored points of zone's signal, oldest first.
func (s *MemorySink) Points(zone forecast.Zone, signal forecast.Signal) []Point {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.series[seriesKey{zone, signal}]
	out := make([]Point, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Point) int { return a.Time.Compare(b.Time) })
	return out
}

// Last implements forecast.History: the n hours of zone's signal that end
// at end (exclusive, on the hour), oldest first. EINVALID for an end that
// is not on the hour or n < 0; ENOTFOUND when nothing is stored for the
// zone's signal; EUNAVAILABLE when an hour in the range is missing.
func (s *MemorySink) Last(ctx context.Context, zone forecast.Zone, signal forecast.Signal, end time.Time, n int) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	end = end.UTC()
	if n < 0 || !end.Equal(end.Truncate(forecast.Hour)) {
		return nil, forecast.Errorf(forecast.EINVALID, "history needs n ≥ 0 and an end on the hour, got %d and %s", n, end.Format(time.RFC3339))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := s.series[seriesKey{zone, signal}]
	if len(m) == 0 {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "no observed %s intensity for zone %s", signal, zone)
	}
	out := make([]float64, n)
	for i := range n {
		t := end.Add(time.Duration(i-n) * forecast.Hour)
		p, ok := m[t.Unix()]
		if !ok {
			return nil, forecast.Errorf(forecast.EUNAVAILABLE, "observed %s intensity of zone %s is missing at %s", signal, zone, t.Format(time.RFC3339))
		}
		out[i] = p.Value
	}
	return out, nil
}
