package ingest

import (
	"context"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// StoreSink adapts the observed-signals store to a Sink, so that the
// pollers write into PostgreSQL or CrateDB (or store.Memory): Upsert is
// UpsertObserved (Point.UpdatedAt is not kept; the store stamps its own
// updated_at), Latest is LatestObserved. The store's errors pass unchanged
// (EINVALID for a bad point, nothing stored; EUNAVAILABLE when the database
// is down). Safe for concurrent use when o is.
func StoreSink(o store.Observed) Sink { return storeSink{o} }

type storeSink struct{ o store.Observed }

func (s storeSink) Upsert(ctx context.Context, zone forecast.Zone, signal forecast.Signal, points []Point) error {
	obs := make([]store.Observation, len(points))
	for i, p := range points {
		obs[i] = store.Observation{Time: p.Time, Value: p.Value, Estimated: p.Estimated}
	}
	return s.o.UpsertObserved(ctx, zone, signal, obs)
}

func (s storeSink) Latest(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (time.Time, bool, error) {
	return s.o.LatestObserved(ctx, zone, signal)
}
