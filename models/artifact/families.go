package artifact

import (
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/baseline"
	"github.com/carbongate/carbongate/models/ridge"
)

// Default returns a registry of carbongate's own families: ridge,
// generic-ridge, persistence and seasonal-naive.
func Default() *Registry {
	return NewRegistry(nil, Ridge(ridge.FamilyZone), Ridge(ridge.FamilyGeneric), Persistence(), SeasonalNaive())
}

// Ridge is the codec of the ridge families (name is ridge.FamilyZone or
// ridge.FamilyGeneric): params hold the ridge.Config, the data file the
// weights followed by the interval bounds when the config has an interval
// (then the loaded model is a ridge.Bounded, a models.IntervalModel).
func Ridge(name string) Family {
	return Family{
		Name: name,
		Encode: func(m models.Model) (any, []float64, error) {
			var r *ridge.Model
			switch v := m.(type) {
			case *ridge.Model:
				r = v
			case ridge.Bounded:
				r = v.Model
			default:
				return nil, nil, forecast.Errorf(forecast.EINVALID, "family %s needs a *ridge.Model, got %T", name, m)
			}
			return r.Config(), r.Weights(), nil
		},
		Decode: func(meta models.Meta, info models.TrainingInfo, params func(any) error, weights []float64) (models.Model, error) {
			var c ridge.Config
			if err := params(&c); err != nil {
				return nil, forecast.Errorf(forecast.EINVALID, "malformed ridge params: %v", err)
			}
			r, err := ridge.New(meta, c, weights, info)
			if err != nil {
				return nil, err
			}
			return r.Serving(), nil
		},
	}
}

// Persistence is the codec of baseline.Persistence (no params, no data).
func Persistence() Family {
	return Family{
		Name: baseline.FamilyPersistence,
		Encode: func(m models.Model) (any, []float64, error) {
			return struct{}{}, nil, nil
		},
		Decode: func(meta models.Meta, _ models.TrainingInfo, _ func(any) error, w []float64) (models.Model, error) {
			if len(w) != 0 {
				return nil, forecast.Errorf(forecast.EINVALID, "persistence has no weights, got %d", len(w))
			}
			return baseline.NewPersistence(meta.Zone, meta.Signal, meta.Lookback, meta.Horizon)
		},
	}
}

type seasonalParams struct {
	Period int `yaml:"period"`
}

// SeasonalNaive is the codec of baseline.SeasonalNaive (params: period).
func SeasonalNaive() Family {
	return Family{
		Name: baseline.FamilySeasonalNaive,
		Encode: func(m models.Model) (any, []float64, error) {
			s, ok := m.(*baseline.SeasonalNaive)
			if !ok {
				return nil, nil, forecast.Errorf(forecast.EINVALID, "family seasonal-naive needs a *baseline.SeasonalNaive, got %T", m)
			}
			return seasonalParams{Period: s.Period()}, nil, nil
		},
		Decode: func(meta models.Meta, _ models.TrainingInfo, params func(any) error, w []float64) (models.Model, error) {
			var p seasonalParams
			if err := params(&p); err != nil {
				return nil, forecast.Errorf(forecast.EINVALID, "malformed seasonal-naive params: %v", err)
			}
			if len(w) != 0 {
				return nil, forecast.Errorf(forecast.EINVALID, "seasonal-naive has no weights, got %d", len(w))
			}
			return baseline.NewSeasonalNaive(meta.Zone, meta.Signal, p.Period, meta.Lookback, meta.Horizon)
		},
	}
}
