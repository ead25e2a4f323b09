package ledger

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// AsOf is obs as it stood at t: an hour that had not ended by t is NaN,
// not observed yet, whatever obs holds. A replay clock's dataset holds the
// clock's future; a live store never does, and is read unchanged.
func AsOf(obs Observations, t time.Time) Observations { return asOf{obs, t} }

type asOf struct {
	obs Observations
	t   time.Time
}

func (a asOf) Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error) {
	s, err := a.obs.Observed(ctx, zone, signal, from, to)
	if err != nil {
		return s, err
	}
	cut := forecast.HourFloor(a.t) // hours starting at or after cut have not ended by t
	if !cut.Before(s.End()) {
		return s, nil
	}
	s.Values = slices.Clone(s.Values) // a table's values are shared
	for i := range s.Values {
		if !s.Start.Add(time.Duration(i) * forecast.Hour).Before(cut) {
			s.Values[i] = math.NaN()
		}
	}
	return s, nil
}
