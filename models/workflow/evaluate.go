package workflow

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/backtest"
)

// Report row names of the stored models.
const (
	RowZone    = "zone"
	RowGeneric = "generic"
)

// EvalConfig says what to evaluate.
type EvalConfig struct {
	Signal   forecast.Signal
	From, To time.Time       // issue days, inclusive (00:00 UTC)
	Zones    []forecast.Zone // nil means every zone of the data
	Registry *artifact.Registry
}

// LoadModels loads the stored zone model of each zone and the generic
// model of signal under root. A missing model directory is left out; a
// malformed one is an error. ENOTFOUND when there is no model at all.
func LoadModels(root string, signal forecast.Signal, zones []forecast.Zone, reg *artifact.Registry) (zone map[forecast.Zone]models.Model, generic models.Model, err error) {
	if reg == nil {
		reg = artifact.Default()
	}
	load := func(z forecast.Zone) (models.Model, error) {
		dir := ModelDir(root, signal, z)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		m, err := reg.Load(dir)
		if err != nil {
			return nil, err
		}
		if meta := m.Meta(); meta.Signal != signal || (z != "" && meta.Zone != z) {
			return nil, forecast.Errorf(forecast.EINVALID, "model in %s/%s is for zone %q and signal %s", signal, z, meta.Zone, meta.Signal)
		}
		return m, nil
	}
	zone = map[forecast.Zone]models.Model{}
	for _, z := range zones {
		m, err := load(z)
		if err != nil {
			return nil, nil, err
		}
		if m != nil {
			zone[z] = m
		}
	}
	if generic, err = load(""); err != nil {
		return nil, nil, err
	}
	if len(zone) == 0 && generic == nil {
		return nil, nil, forecast.Errorf(forecast.ENOTFOUND, "no %s model for these zones in the models directory", signal)
	}
	return zone, generic, nil
}

// Evaluate backtests the models stored under root on tables (see
// backtest.Run): for each zone, its zone model ("zone"), the generic model
// ("generic"), seasonal naive and persistence.
func Evaluate[T Table](ctx context.Context, tables map[forecast.Zone]T, root string, cfg EvalConfig) (*backtest.Report, error) {
	zones, err := selectZones(tables, cfg.Zones)
	if err != nil {
		return nil, err
	}
	if cfg.Signal != forecast.SignalDirect && cfg.Signal != forecast.SignalLifecycle {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "signal", "signal %q is not one of lifecycle, direct", cfg.Signal)
	}
	zm, generic, err := LoadModels(root, cfg.Signal, zones, cfg.Registry)
	if err != nil {
		return nil, err
	}
	var in []backtest.Zone
	for _, z := range zones {
		var cands []backtest.Candidate
		lookback, horizon := 0, backtest.LeadDays*forecast.HoursPerDay
		if m, ok := zm[z]; ok {
			cands = append(cands, backtest.Candidate{Name: RowZone, Model: m})
			lookback = max(lookback, m.Meta().Lookback)
		}
		if generic != nil {
			cands = append(cands, backtest.Candidate{Name: RowGeneric, Model: generic})
			lookback = max(lookback, generic.Meta().Lookback)
		}
		base, err := backtest.Baselines(z, cfg.Signal, max(lookback, 168), horizon)
		if err != nil {
			return nil, err
		}
		in = append(in, backtest.Zone{Zone: z, Series: tables[z].Series(cfg.Signal), Candidates: append(cands, base...)})
	}
	return backtest.Run(ctx, backtest.Config{Signal: cfg.Signal, From: cfg.From, To: cfg.To}, in)
}
