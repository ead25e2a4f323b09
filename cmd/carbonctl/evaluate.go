package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/backtest"
	"github.com/carbongate/carbongate/models/decisions"
	"github.com/carbongate/carbongate/models/evaluate"
	"github.com/carbongate/carbongate/models/evaluate/plot"
	"github.com/carbongate/carbongate/models/workflow"
)

// evaluateTimeout bounds one evaluate or promote --if-better command.
const evaluateTimeout = 15 * time.Minute

const storeHelp = "forecast store: postgres://… or crate://… (forecasts written by carbonctl backfill, and observed signals)"

// openStoreFunc opens the forecast store a --store URL names; tests pass
// one that returns an in-memory store.
type openStoreFunc func(ctx context.Context, uri string) (store.DB, error)

// evalFlags are the flags of carbonctl evaluate.
type evalFlags struct {
	data, models, store, from, to, signal, format, zones string
	model, versions, plots, week, plotSize               string
	leadDays                                             int
	common                                               bool
	dec                                                  decisionFlags
}

func (f *evalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.data, "data", "", "data `dir` (<zone>.csv files or <zone>/ folders), or bundled for the embedded data: the observations (with --store: instead of the store's)")
	fs.StringVar(&f.models, "models", "", "models `dir` written by carbonctl train: backtest them in-process (without --store)")
	fs.StringVar(&f.store, "store", "", storeHelp+": score the stored forecasts")
	fs.StringVar(&f.from, "from", "", "first issue day, YYYY-MM-DD (in-process: forecasts issued at 00:00 UTC)")
	fs.StringVar(&f.to, "to", "", "last issue day, YYYY-MM-DD, inclusive")
	fs.StringVar(&f.signal, "signal", "", "signal: direct or lifecycle (with --store also marginal; default every stored signal)")
	fs.StringVar(&f.format, "output", "table", "output format: table or json")
	fs.StringVar(&f.zones, "zones", "", "comma-separated zone ids (default: every zone)")
	fs.StringVar(&f.model, "model", "", "with --store: model name, or a prefix ending in * (e.g. carbon-forecaster-*)")
	fs.StringVar(&f.versions, "versions", "", "with --store: comma-separated model versions (e.g. 3,4)")
	fs.StringVar(&f.plots, "plots", "", "write PNG plots into this `dir`: model comparison and error by lead hour per zone, and forecast vs observed for --week; with --decisions, the capture per zone and source of each job shape")
	fs.StringVar(&f.week, "week", "", "first day (YYYY-MM-DD) of the forecast-vs-observed plot (default: the first scored issue day)")
	fs.StringVar(&f.plotSize, "plot-size", "1200x600", "plot size in pixels, WIDTHxHEIGHT")
	fs.IntVar(&f.leadDays, "lead-days", evaluate.DefaultLeadDays, "with --store: lead days scored (24 h each)")
	f.dec.register(fs)
	fs.BoolVar(&f.common, "common", false, "with --store: score only the issue times every model of a zone and signal has (carbongate's models and a vendor's on the same issues; see docs/vendors.md)")
}

// openForecastStore opens the forecast store of a --store URL.
func openForecastStore(ctx context.Context, uri string) (store.DB, error) {
	return connect.Open(ctx, uri)
}

// runEvaluate scores forecasts: those of the forecast store (--store) or,
// without it, stored models backtested in-process (--data, --models) with
// daily 96-hour forecasts, persistence included.
func runEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return evaluateWith(ctx, args, stdout, stderr, openForecastStore)
}

func evaluateWith(ctx context.Context, args []string, stdout, stderr io.Writer, open openStoreFunc) error {
	fs := newFlags("evaluate", stdout)
	var f evalFlags
	f.register(fs.FlagSet)
	fs.Alias("format", "output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if f.format != "table" && f.format != "json" {
		return usagef("--output %q is not one of table, json", f.format)
	}
	if f.week != "" && f.plots == "" {
		return usagef("--week needs --plots")
	}
	size, err := parseSize(f.plotSize)
	if err != nil {
		return usagef("--plot-size: %v", err)
	}
	if f.dec.on {
		return evaluateDecisions(ctx, f, size, open, stdout, stderr)
	}
	if f.dec.shapes != decisions.DefaultShapeList || f.dec.shapesFile != "" || f.dec.every != decisions.DefaultEvery || f.dec.redecide != 0 || f.dec.redecideGain != 0 {
		return usagef("--shapes, --shapes-file, --every, --redecide and --redecide-gain need --decisions")
	}
	if f.store == "" {
		return evaluateLocal(ctx, f, size, stdout, stderr)
	}
	return evaluateStore(ctx, f, size, open, stdout, stderr)
}

// evaluateStore scores the forecasts of --store.
func evaluateStore(ctx context.Context, f evalFlags, size plot.Size, open openStoreFunc, stdout, stderr io.Writer) error {
	if f.models != "" {
		return usagef("--models is for the in-process mode: drop it or --store")
	}
	sel, err := f.selection()
	if err != nil {
		return err
	}
	if _, _, err := connect.Parse(f.store); err != nil {
		return usagef("--store: %s", forecast.ErrorMessage(err))
	}
	ctx, cancel := context.WithTimeout(ctx, evaluateTimeout)
	defer cancel()
	db, err := open(ctx, f.store)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	defer db.Close()
	var obs evaluate.Observations = db
	if f.data != "" {
		tables, err := loadData(f.data, stderr)
		if err != nil {
			return err
		}
		obs = tableObservations(tables)
	}
	t0 := time.Now()
	set, err := evaluate.Load(ctx, db, sel)
	if err != nil {
		return err
	}
	if f.common {
		set = evaluate.Common(set)
	}
	if len(set.Issues) == 0 {
		return forecast.Errorf(forecast.ENOTFOUND, "no forecast in the store matches --zones, --signal, --model, --versions, --from and --to (and, with --common, is issued when every other model's is)")
	}
	rep, err := evaluate.Score(ctx, set, obs)
	if err != nil {
		return err
	}
	if err := writeReport(stdout, rep, f.format); err != nil {
		return err
	}
	scored, skipped := 0, 0
	for _, r := range rep.Results {
		scored += r.Scored
		skipped += r.Skipped
	}
	fmt.Fprintf(stderr, "evaluate: %d series, %d issued forecasts scored, %d skipped (observations missing), in %.1fs\n",
		len(rep.Results), scored, skipped, time.Since(t0).Seconds())
	return writePlots(ctx, f, size, set, rep, obs, stderr)
}

// selection turns the store-mode flags into an evaluate.Selection.
func (f evalFlags) selection() (evaluate.Selection, error) {
	sel := evaluate.Selection{LeadDays: f.leadDays}
	if f.leadDays < 1 || f.leadDays > 30 {
		return sel, usagef("--lead-days %d is not between 1 and 30", f.leadDays)
	}
	zs, err := parseZones(f.zones)
	if err != nil {
		return sel, usagef("--zones: %v", err)
	}
	sel.Query.Zones = zs
	if f.signal != "" {
		if sel.Query.Signal, err = forecast.ParseAnySignal(f.signal); err != nil {
			return sel, usagef("--signal: %s", forecast.ErrorMessage(err))
		}
	}
	if prefix, ok := strings.CutSuffix(f.model, "*"); ok {
		sel.ModelPrefix = prefix
	} else {
		sel.Query.ModelName = f.model
	}
	for _, v := range strings.Split(f.versions, ",") {
		if v = strings.TrimSpace(v); v != "" {
			sel.Versions = append(sel.Versions, v)
		}
	}
	if f.from != "" {
		d, err := parseDay(f.from)
		if err != nil {
			return sel, usagef("--from: %v", err)
		}
		sel.Query.IssuedFrom = d
	}
	if f.to != "" {
		d, err := parseDay(f.to)
		if err != nil {
			return sel, usagef("--to: %v", err)
		}
		sel.Query.IssuedTo = d.AddDate(0, 0, 1)
	}
	if !sel.Query.IssuedFrom.IsZero() && !sel.Query.IssuedTo.IsZero() && !sel.Query.IssuedFrom.Before(sel.Query.IssuedTo) {
		return sel, usagef("--to %s is before --from %s", f.to, f.from)
	}
	return sel, nil
}

// parseDay reads a YYYY-MM-DD day or an RFC 3339 time, truncated to its
// day (UTC).
func parseDay(s string) (time.Time, error) {
	t, err := parseTime(s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(24 * time.Hour), nil
}

func parseSize(s string) (plot.Size, error) {
	var sz plot.Size
	w, h, ok := strings.Cut(s, "x")
	if _, err := fmt.Sscanf(w+" "+h, "%d %d", &sz.Width, &sz.Height); !ok || err != nil {
		return sz, fmt.Errorf("%q is not WIDTHxHEIGHT", s)
	}
	if sz.Width < 100 || sz.Height < 100 || sz.Width > 8000 || sz.Height > 8000 {
		return sz, fmt.Errorf("%q: each side must be 100 to 8000 pixels", s)
	}
	return sz, nil
}

func writeReport(w io.Writer, rep *evaluate.Report, format string) error {
	if format == "json" {
		return evaluate.WriteJSON(w, rep)
	}
	return evaluate.WriteTable(w, rep)
}

// writePlots writes the PNG plots of rep into --plots, if given.
func writePlots(ctx context.Context, f evalFlags, size plot.Size, set *evaluate.Set, rep *evaluate.Report, obs evaluate.Observations, stderr io.Writer) error {
	if f.plots == "" {
		return nil
	}
	var week time.Time
	if f.week != "" {
		d, err := parseDay(f.week)
		if err != nil {
			return usagef("--week: %v", err)
		}
		week = d
	} else {
		for _, r := range rep.Results {
			if !r.First.IsZero() && (week.IsZero() || r.First.Before(week)) {
				week = r.First.Truncate(24 * time.Hour)
			}
		}
	}
	var traces []evaluate.Trace
	if !week.IsZero() {
		var err error
		if traces, err = evaluate.Week(ctx, set, obs, "", week, 7); err != nil {
			return err
		}
		if len(traces) == 0 {
			fmt.Fprintf(stderr, "evaluate: no forecast covers the week of %s: no forecast-vs-observed plot\n", week.Format(time.DateOnly))
		}
	}
	paths, err := plot.WriteDir(f.plots, rep, traces, size)
	for _, p := range paths {
		fmt.Fprintf(stderr, "evaluate: wrote %s\n", p)
	}
	return err
}

// tableObservations serves the observations of dataset tables.
func tableObservations(tables map[forecast.Zone]*dataset.Table) evaluate.SeriesFunc {
	return func(z forecast.Zone, sig forecast.Signal) (forecast.Series, bool) {
		t, ok := tables[z]
		if !ok {
			return forecast.Series{}, false
		}
		return t.Series(sig), true
	}
}

// evaluateLocal is the in-process mode: backtest the models of --models on
// --data (models/backtest), and with --plots also issue their forecasts
// into memory to draw them.
func evaluateLocal(ctx context.Context, f evalFlags, size plot.Size, stdout, stderr io.Writer) error {
	if f.data == "" || f.models == "" || f.from == "" || f.to == "" || f.signal == "" {
		return usagef("--data, --models, --from, --to and --signal are required (or --store)")
	}
	if f.model != "" || f.versions != "" || f.common {
		return usagef("--model, --versions and --common select stored forecasts: they need --store")
	}
	d1, err := parseTime(f.from)
	if err != nil {
		return usagef("--from: %v", err)
	}
	d2, err := parseTime(f.to)
	if err != nil {
		return usagef("--to: %v", err)
	}
	if d2.Before(d1) {
		return usagef("--to %s is before --from %s", f.to, f.from)
	}
	sig, err := parseSignal(f.signal)
	if err != nil {
		return usagef("--signal: %v", err)
	}
	zs, err := parseZones(f.zones)
	if err != nil {
		return usagef("--zones: %v", err)
	}
	tables, err := loadData(f.data, stderr)
	if err != nil {
		return err
	}
	t0 := time.Now()
	cfg := workflow.EvalConfig{Signal: sig, From: d1, To: d2, Zones: zs}
	rep, err := workflow.Evaluate(ctx, tables, f.models, cfg)
	if err != nil {
		return err
	}
	if f.format == "json" {
		scored, skipped := rep.Counts()
		fmt.Fprintf(stderr, "evaluate: %d issue days scored, %d skipped, in %.1fs\n", scored, skipped, time.Since(t0).Seconds())
		err = backtest.WriteJSON(stdout, rep)
	} else {
		err = backtest.WriteTable(stdout, rep)
	}
	if err != nil || f.plots == "" {
		return err
	}
	mem, err := issueLocal(ctx, tables, f.models, cfg)
	if err != nil {
		return err
	}
	set, err := evaluate.Load(ctx, mem, evaluate.Selection{})
	if err != nil {
		return err
	}
	obs := tableObservations(tables)
	erep, err := evaluate.Score(ctx, set, obs)
	if err != nil {
		return err
	}
	return writePlots(ctx, f, size, set, erep, obs, stderr)
}

// issueLocal issues the forecasts the in-process backtest scores (zone and
// generic models of modelsDir, seasonal naive and persistence) into an
// in-memory store, version "local", so they can be plotted.
func issueLocal(ctx context.Context, tables map[forecast.Zone]*dataset.Table, modelsDir string, cfg workflow.EvalConfig) (*store.Memory, error) {
	zones := cfg.Zones
	if len(zones) == 0 {
		for z := range tables {
			zones = append(zones, z)
		}
		slices.Sort(zones)
	}
	zm, generic, err := workflow.LoadModels(modelsDir, cfg.Signal, zones, nil)
	if err != nil {
		return nil, err
	}
	const horizon = backtest.LeadDays * forecast.HoursPerDay
	mem := store.NewMemory()
	for _, z := range zones {
		t, ok := tables[z]
		if !ok {
			return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "zones", "zone %s is not in the data", z)
		}
		var cands []backtest.Candidate
		if m, ok := zm[z]; ok {
			cands = append(cands, backtest.Candidate{Name: m.Meta().Name, Model: m})
		}
		if generic != nil {
			cands = append(cands, backtest.Candidate{Name: generic.Meta().Name, Model: generic})
		}
		base, err := backtest.Baselines(z, cfg.Signal, 168, horizon)
		if err != nil {
			return nil, err
		}
		rows, err := issueZone(ctx, z, t.Series(cfg.Signal), cfg, append(cands, base...))
		if err != nil {
			return nil, err
		}
		if err := mem.WriteForecasts(ctx, "evaluate", nil, rows); err != nil {
			return nil, err
		}
	}
	return mem, nil
}

// issueZone issues one 96-hour forecast per candidate and day at 00:00 UTC
// from cfg.From to cfg.To, skipping days whose history is incomplete.
func issueZone(ctx context.Context, z forecast.Zone, s forecast.Series, cfg workflow.EvalConfig, cands []backtest.Candidate) ([]store.ForecastRow, error) {
	const horizon = backtest.LeadDays * forecast.HoursPerDay
	from, to := cfg.From.UTC().Truncate(24*time.Hour), cfg.To.UTC().Truncate(24*time.Hour)
	var rows []store.ForecastRow
	out, lower, upper := make([]float64, 0), make([]float64, 0), make([]float64, 0)
	for day := from; !day.After(to); day = day.AddDate(0, 0, 1) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, c := range cands {
			meta := c.Model.Meta()
			h, ok := s.Last(day, meta.Lookback)
			if !ok || !finiteAll(h) || meta.Horizon < horizon {
				continue
			}
			out, lower, upper = resize(out, meta.Horizon), resize(lower, meta.Horizon), resize(upper, meta.Horizon)
			interval := false
			if im, ok := c.Model.(models.IntervalModel); ok {
				if err := im.PredictInterval(h, day, out, lower, upper); err != nil {
					return nil, err
				}
				interval = true
			} else if err := c.Model.Predict(h, day, out); err != nil {
				return nil, err
			}
			for i := range horizon {
				lo, hi := math.NaN(), math.NaN()
				if interval {
					lo, hi = lower[i], upper[i]
				}
				rows = append(rows, store.ForecastRow{Zone: z, Signal: cfg.Signal, ModelName: c.Name, ModelVersion: "local",
					IssuedAt: day, TargetTime: day.Add(time.Duration(i) * forecast.Hour), Value: out[i], Lower: lo, Upper: hi})
			}
		}
	}
	return rows, nil
}

func resize(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

func finiteAll(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
