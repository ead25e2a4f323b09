// Package workflow is what carbonctl train and evaluate do, as a library:
// fit per-zone and generic ridge models on data before a cut-off and store
// them as MLflow model directories, and backtest the stored models.
//
// Layout of a models directory:
//
//	<signal>/<ZONE>/   carbon-forecaster-<ZONE>, family ridge
//	<signal>/generic/  carbon-forecaster-generic, family generic-ridge
package workflow

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/ridge"
)

// Table is the part of a dataset table the workflows read;
// *dataset.Table implements it.
type Table interface {
	Series(sig forecast.Signal) forecast.Series
}

// GenericDir is the directory name of the generic model.
const GenericDir = "generic"

// ModelDir returns where the model of zone ("" for the generic model) and
// signal lives under root.
func ModelDir(root string, signal forecast.Signal, zone forecast.Zone) string {
	if zone == "" {
		return filepath.Join(root, string(signal), GenericDir)
	}
	return filepath.Join(root, string(signal), string(zone))
}

// Entry is a directory of the layout: <signal>/<Name>/ under a root.
type Entry struct {
	Signal forecast.Signal
	Name   string // a zone id, GenericDir, or whatever else the directory is called
	Dir    string
}

// Entries lists the directories of the layout under root, of signal (""
// for every signal), in signal then name order, whether or not they hold
// a model (callers load them and say what is wrong). Hidden directories
// are skipped; a missing <signal> directory holds none.
func Entries(root string, signal forecast.Signal) ([]Entry, error) {
	var out []Entry
	for _, sig := range forecast.Signals {
		if signal != "" && sig != signal {
			continue
		}
		sdir := filepath.Join(root, string(sig))
		ents, err := os.ReadDir(sdir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return out, err
		}
		for _, e := range ents {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, Entry{Signal: sig, Name: e.Name(), Dir: filepath.Join(sdir, e.Name())})
			}
		}
	}
	return out, nil
}

// TrainConfig says what to train.
type TrainConfig struct {
	// Until is the cut-off: no observation at or after it is read.
	// Required.
	Until time.Time
	// Zones to train (and pool into the generic model); nil means every
	// zone of the data.
	Zones []forecast.Zone
	// Signals to train; nil means both.
	Signals []forecast.Signal
	// Ridge is the model configuration; the zero value means
	// ridge.DefaultConfig().
	Ridge ridge.Config
	// NoGeneric skips the generic model.
	NoGeneric bool

	// Registry writes the models; nil means artifact.Default().
	Registry *artifact.Registry
	// Workers bounds the models fitted at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is called once per model written, from one
	// goroutine at a time.
	Progress func(Result)
}

// Result describes one trained model.
type Result struct {
	Name    string
	Family  string
	Zone    forecast.Zone // "" for the generic model
	Signal  forecast.Signal
	Dir     string
	Samples int
	Elapsed time.Duration
}

// Train fits a ridge model per zone and signal and a generic model per
// signal on the data of tables before cfg.Until and saves each under out
// (see ModelDir); each model directory is replaced atomically. Results come
// in a fixed order: per signal, the zones sorted, then the generic model.
// EINVALID for a missing cut-off or no complete sample before it,
// ENOTFOUND for a zone not in tables.
func Train[T Table](ctx context.Context, tables map[forecast.Zone]T, out string, cfg TrainConfig) ([]Result, error) {
	if cfg.Until.IsZero() {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "until", "a training cut-off is required")
	}
	zones, err := selectZones(tables, cfg.Zones)
	if err != nil {
		return nil, err
	}
	signals := cfg.Signals
	if len(signals) == 0 {
		signals = []forecast.Signal{forecast.SignalDirect, forecast.SignalLifecycle}
	}
	rc := cfg.Ridge
	if rc.Lookback == 0 {
		rc = ridge.DefaultConfig()
	}
	reg := cfg.Registry
	if reg == nil {
		reg = artifact.Default()
	}
	type job struct {
		zone   forecast.Zone
		signal forecast.Signal
	}
	var jobs []job
	for _, sig := range signals {
		for _, z := range zones {
			jobs = append(jobs, job{z, sig})
		}
		if !cfg.NoGeneric {
			jobs = append(jobs, job{"", sig})
		}
	}
	results := make([]Result, len(jobs))
	errs := make([]error, len(jobs))
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				res, err := trainOne(ctx, tables, zones, j.zone, j.signal, out, cfg.Until, rc, reg)
				results[i], errs[i] = res, err
				if err != nil {
					cancel()
					continue
				}
				if cfg.Progress != nil {
					mu.Lock()
					cfg.Progress(res)
					mu.Unlock()
				}
			}
		})
	}
	// Generic models go first: they are the longest to fit.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].zone == "" && jobs[order[b]].zone != "" })
	for _, i := range order {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return results, nil
}

func trainOne[T Table](ctx context.Context, tables map[forecast.Zone]T, all []forecast.Zone, zone forecast.Zone, signal forecast.Signal, out string, until time.Time, rc ridge.Config, reg *artifact.Registry) (Result, error) {
	t0 := time.Now()
	spec := ridge.Spec{Zone: zone, Signal: signal, Until: until, Config: rc}
	var in []ridge.Input
	if zone == "" {
		spec.Name, spec.Family = models.GenericName, ridge.FamilyGeneric
		for _, z := range all {
			in = append(in, ridge.Input{Zone: z, Series: tables[z].Series(signal)})
		}
	} else {
		spec.Name, spec.Family = models.ZoneModelName(zone), ridge.FamilyZone
		in = []ridge.Input{{Zone: zone, Series: tables[zone].Series(signal)}}
	}
	m, err := ridge.Fit(ctx, spec, in)
	if err != nil {
		return Result{}, err
	}
	dir := ModelDir(out, signal, zone)
	if err := reg.Save(dir, m.Serving()); err != nil {
		return Result{}, err
	}
	return Result{
		Name: spec.Name, Family: spec.Family, Zone: zone, Signal: signal, Dir: dir,
		Samples: m.Training().Samples, Elapsed: time.Since(t0),
	}, nil
}

// selectZones returns the wanted zones, sorted, or every zone of tables.
func selectZones[T Table](tables map[forecast.Zone]T, want []forecast.Zone) ([]forecast.Zone, error) {
	if len(want) == 0 {
		zs := make([]forecast.Zone, 0, len(tables))
		for z := range tables {
			zs = append(zs, z)
		}
		slices.Sort(zs)
		if len(zs) == 0 {
			return nil, forecast.Errorf(forecast.EINVALID, "the data holds no zone")
		}
		return zs, nil
	}
	zs := slices.Clone(want)
	slices.Sort(zs)
	zs = slices.Compact(zs)
	for _, z := range zs {
		if _, ok := tables[z]; !ok {
			return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "zones", "zone %s is not in the data", z)
		}
	}
	return zs, nil
}
