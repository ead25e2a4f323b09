// Package baseline holds the naive forecasters every model must beat:
// persistence (the last observed hour held flat) and seasonal naive (the
// last period repeated). They need no training and are safe for concurrent
// use.
package baseline

import (
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
)

// Family names, as written in artifacts and reports.
const (
	FamilyPersistence   = "persistence"
	FamilySeasonalNaive = "seasonal-naive"
)

// Daily and Weekly are the usual seasonal-naive periods, in hours.
const (
	Daily  = 24
	Weekly = 168
)

// Persistence forecasts every hour as the last observed one.
type Persistence struct{ meta models.Meta }

var _ models.Model = (*Persistence)(nil)

// NewPersistence returns a persistence forecaster reading lookback hours
// (at least 1) and writing horizon hours. zone may be "" (any zone).
func NewPersistence(zone forecast.Zone, signal forecast.Signal, lookback, horizon int) (*Persistence, error) {
	if lookback < 1 || horizon < 1 {
		return nil, forecast.Errorf(forecast.EINVALID, "persistence needs lookback ≥ 1 and horizon ≥ 1, got %d and %d", lookback, horizon)
	}
	return &Persistence{meta: models.Meta{
		Name: "persistence", Family: FamilyPersistence, Zone: zone, Signal: signal, Lookback: lookback, Horizon: horizon,
	}}, nil
}

// Meta implements models.Model.
func (p *Persistence) Meta() models.Meta { return p.meta }

// Predict implements models.Model.
func (p *Persistence) Predict(history []float64, start time.Time, out []float64) error {
	if err := models.CheckInput(p.meta, history, start, out); err != nil {
		return err
	}
	last := history[len(history)-1]
	for i := range out {
		out[i] = last
	}
	return nil
}

// SeasonalNaive forecasts hour h as the observed hour one period earlier
// (h mod period hours into the last observed period).
type SeasonalNaive struct {
	meta   models.Meta
	period int
}

var _ models.Model = (*SeasonalNaive)(nil)

// NewSeasonalNaive returns a seasonal-naive forecaster with the given period
// in hours (1 ≤ period ≤ lookback).
func NewSeasonalNaive(zone forecast.Zone, signal forecast.Signal, period, lookback, horizon int) (*SeasonalNaive, error) {
	if period < 1 || period > lookback || horizon < 1 {
		return nil, forecast.Errorf(forecast.EINVALID, "seasonal naive needs 1 ≤ period ≤ lookback and horizon ≥ 1, got period %d, lookback %d, horizon %d", period, lookback, horizon)
	}
	return &SeasonalNaive{period: period, meta: models.Meta{
		Name: "seasonal-naive", Family: FamilySeasonalNaive, Zone: zone, Signal: signal, Lookback: lookback, Horizon: horizon,
	}}, nil
}

// Meta implements models.Model.
func (s *SeasonalNaive) Meta() models.Meta { return s.meta }

// Period returns the season length in hours.
func (s *SeasonalNaive) Period() int { return s.period }

// Predict implements models.Model.
func (s *SeasonalNaive) Predict(history []float64, start time.Time, out []float64) error {
	if err := models.CheckInput(s.meta, history, start, out); err != nil {
		return err
	}
	last := history[len(history)-s.period:]
	for i := range out {
		out[i] = last[i%s.period]
	}
	return nil
}
