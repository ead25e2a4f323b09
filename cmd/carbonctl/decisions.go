package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/decisions"
	"github.com/carbongate/carbongate/models/evaluate"
	"github.com/carbongate/carbongate/models/evaluate/plot"
	"github.com/carbongate/carbongate/models/workflow"
)

// Names of the in-process sources of evaluate --decisions.
const (
	sourceCarbongate = "carbongate" // each zone's model, the generic model where a zone has none
	sourceGeneric    = "generic"    // the generic model everywhere
)

// decisionFlags are the flags of evaluate --decisions.
type decisionFlags struct {
	on                 bool
	shapes, shapesFile string
	every, redecide    time.Duration
	redecideGain       float64
}

func (d *decisionFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&d.on, "decisions", false, "replay scheduling decisions instead of scoring errors: per zone and job shape, the saving realized (observed intensity) by carbongate's pick, a seasonal-naive pick and the oracle's, and the share of the oracle's saving captured")
	fs.StringVar(&d.shapes, "shapes", decisions.DefaultShapeList, "with --decisions: comma-separated job shapes DURATION/SLACK[@ZONE+ZONE…] (the job must finish within SLACK of its issue time; with zones it may run in any of them, the first being the run-now baseline)")
	fs.StringVar(&d.shapesFile, "shapes-file", "", "with --decisions: `file` of shapes, one per line (# comments), instead of --shapes")
	fs.DurationVar(&d.every, "every", decisions.DefaultEvery, "with --decisions: step between issue times (whole hours)")
	fs.DurationVar(&d.redecide, "redecide", 0, "with --decisions: re-decide each pick this often (whole hours) with the forecast issued then, while its start is still ahead; 0: decide once")
	fs.Float64Var(&d.redecideGain, "redecide-gain", 0, "with --redecide: move a pick only when the new window beats the held one, both by the newer forecast, by more than this share (carbongate's --redecide-gain, 0.05 by default there); 0: any better window")
}

// parse returns the shapes of --shapes or --shapes-file.
func (d decisionFlags) parse() ([]decisions.Shape, error) {
	if d.shapesFile == "" {
		s, err := decisions.ParseShapes(d.shapes)
		if err != nil {
			return nil, usagef("--shapes: %s", forecast.ErrorMessage(err))
		}
		return s, nil
	}
	fh, err := os.Open(d.shapesFile)
	if err != nil {
		return nil, usagef("--shapes-file: %v", err)
	}
	defer fh.Close()
	s, err := decisions.ReadShapes(fh)
	if err != nil {
		return nil, usagef("--shapes-file %s: %s", d.shapesFile, forecast.ErrorMessage(err))
	}
	return s, nil
}

// issueSpan reads --from and --to as the first and last issue time: a
// date as --to means through the end of that day.
func issueSpan(from, to string, every time.Duration) (time.Time, time.Time, error) {
	d1, err := parseTime(from)
	if err != nil {
		return d1, d1, usagef("--from: %v", err)
	}
	d2, err := parseTime(to)
	if err != nil {
		return d1, d2, usagef("--to: %v", err)
	}
	if _, err := time.Parse(time.DateOnly, to); err == nil {
		d2 = d2.Add(24*time.Hour - every)
	}
	if d2.Before(d1) || !d1.Equal(forecast.HourFloor(d1)) {
		return d1, d2, usagef("--from %s must be a whole hour, no later than --to %s", from, to)
	}
	return d1, d2, nil
}

// maxSlack returns the longest slack of shapes.
func maxSlack(shapes []decisions.Shape) time.Duration {
	var m time.Duration
	for _, s := range shapes {
		m = max(m, s.Slack)
	}
	return m
}

// evaluateDecisions is evaluate --decisions: in-process (--models, --data)
// or on the forecasts of --store.
func evaluateDecisions(ctx context.Context, f evalFlags, size plot.Size, open openStoreFunc, stdout, stderr io.Writer) error {
	if f.common || f.week != "" {
		return usagef("--week and --common are not for --decisions")
	}
	shapes, err := f.dec.parse()
	if err != nil {
		return err
	}
	if f.dec.every <= 0 || f.dec.every%time.Hour != 0 {
		return usagef("--every %v is not a positive whole number of hours", f.dec.every)
	}
	if f.dec.redecide < 0 || f.dec.redecide%time.Hour != 0 {
		return usagef("--redecide %v is not a whole number of hours", f.dec.redecide)
	}
	if !(f.dec.redecideGain >= 0 && f.dec.redecideGain < 1) || (f.dec.redecideGain > 0 && f.dec.redecide == 0) {
		return usagef("--redecide-gain %v must be in [0, 1) and needs --redecide", f.dec.redecideGain)
	}
	t0 := time.Now()
	var rep *decisions.Report
	if f.store == "" {
		rep, err = decisionsLocal(ctx, f, shapes)
	} else {
		rep, err = decisionsStore(ctx, f, shapes, open, stderr)
	}
	if err != nil {
		return err
	}
	issues, skipped := 0, 0
	for _, s := range rep.Shapes {
		issues += s.Issues
		skipped += s.Skipped
	}
	fmt.Fprintf(stderr, "evaluate: %d decisions replayed, %d skipped (observations or forecasts missing), in %.1fs\n", issues, skipped, time.Since(t0).Seconds())
	if f.plots != "" {
		paths, err := plot.WriteCapture(f.plots, rep, size)
		if err != nil {
			return err
		}
		for _, p := range paths {
			fmt.Fprintf(stderr, "evaluate: wrote %s\n", p)
		}
	}
	if f.format == "json" {
		return decisions.WriteJSON(stdout, rep)
	}
	return decisions.WriteTable(stdout, rep)
}

// decisionsLocal replays the models of --models on --data: carbongate's
// chain (zone model, else generic), the generic model, seasonal naive.
func decisionsLocal(ctx context.Context, f evalFlags, shapes []decisions.Shape) (*decisions.Report, error) {
	if f.data == "" || f.models == "" || f.from == "" || f.to == "" || f.signal == "" {
		return nil, usagef("--data, --models, --from, --to and --signal are required (or --store)")
	}
	if f.model != "" || f.versions != "" {
		return nil, usagef("--model and --versions select stored forecasts: they need --store")
	}
	from, to, err := issueSpan(f.from, f.to, f.dec.every)
	if err != nil {
		return nil, err
	}
	sig, err := parseSignal(f.signal)
	if err != nil {
		return nil, usagef("--signal: %v", err)
	}
	zs, err := parseZones(f.zones)
	if err != nil {
		return nil, usagef("--zones: %v", err)
	}
	tables, err := loadData(f.data, io.Discard)
	if err != nil {
		return nil, err
	}
	observed := map[forecast.Zone]forecast.Series{}
	for z, t := range tables {
		observed[z] = t.Series(sig)
	}
	if len(zs) == 0 {
		for z := range tables {
			zs = append(zs, z)
		}
	}
	zm, generic, err := workflow.LoadModels(f.models, sig, zs, nil)
	if err != nil {
		return nil, err
	}
	horizon := int(maxSlack(shapes) / time.Hour)
	naive, err := decisions.NaiveForecasts(observed, sig, horizon)
	if err != nil {
		return nil, err
	}
	sources := []decisions.Source{{Name: sourceCarbongate, Forecasts: decisions.ModelForecasts{Models: zm, Fallback: generic, Observed: observed}}}
	if generic != nil {
		sources = append(sources, decisions.Source{Name: sourceGeneric, Forecasts: decisions.ModelForecasts{Fallback: generic, Observed: observed}})
	}
	sources = append(sources, decisions.Source{Name: decisions.SeasonalNaive, Forecasts: naive})
	cfg := decisions.Config{Shapes: shapes, Zones: zs, From: from, To: to, Every: f.dec.every, Redecide: f.dec.redecide, RedecideGain: f.dec.redecideGain}
	return decisions.Run(ctx, cfg, observed, sources)
}

// decisionsStore replays the forecasts of --store (each model name and
// version a source) beside seasonal naive, on the store's observations or
// --data's.
func decisionsStore(ctx context.Context, f evalFlags, shapes []decisions.Shape, open openStoreFunc, stderr io.Writer) (*decisions.Report, error) {
	if f.models != "" {
		return nil, usagef("--models is for the in-process mode: drop it or --store")
	}
	f.leadDays = int((maxSlack(shapes) + 24*time.Hour - 1) / (24 * time.Hour))
	sel, err := f.selection()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, evaluateTimeout)
	defer cancel()
	db, err := open(ctx, f.store)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	var obs evaluate.Observations = db
	if f.data != "" {
		tables, err := loadData(f.data, stderr)
		if err != nil {
			return nil, err
		}
		obs = tableObservations(tables)
	}
	set, err := evaluate.Load(ctx, db, sel)
	if err != nil {
		return nil, err
	}
	return decisions.RunStored(ctx, decisions.StoredConfig{Shapes: shapes, Every: f.dec.every, Redecide: f.dec.redecide, RedecideGain: f.dec.redecideGain, Signal: sel.Query.Signal}, set, obs)
}
