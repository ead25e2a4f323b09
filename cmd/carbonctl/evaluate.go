package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/carbongate/carbongate/models/backtest"
	"github.com/carbongate/carbongate/models/workflow"
)

// runEvaluate backtests stored models with daily 96-hour forecasts and
// reports MAPE per lead day per zone and model, persistence included.
func runEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("evaluate", stderr)
	data := fs.String("data", "", "data `dir` (<zone>.csv files or <zone>/ folders), or bundled for the embedded data")
	modelsDir := fs.String("models", "", "models `dir` written by carbonctl train")
	from := fs.String("from", "", "first issue day, YYYY-MM-DD (forecasts issued at 00:00 UTC)")
	to := fs.String("to", "", "last issue day, YYYY-MM-DD, inclusive")
	signal := fs.String("signal", "", "signal: direct or lifecycle")
	format := fs.String("format", "table", "output format: table or json")
	zones := fs.String("zones", "", "comma-separated zone ids (default: every zone of the data)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("evaluate: unexpected argument %q", fs.Arg(0))
	}
	if *data == "" || *modelsDir == "" || *from == "" || *to == "" || *signal == "" {
		return usagef("evaluate: --data, --models, --from, --to and --signal are required")
	}
	if *format != "table" && *format != "json" {
		return usagef("evaluate: --format %q is not one of table, json", *format)
	}
	d1, err := parseTime(*from)
	if err != nil {
		return usagef("evaluate: --from: %v", err)
	}
	d2, err := parseTime(*to)
	if err != nil {
		return usagef("evaluate: --to: %v", err)
	}
	if d2.Before(d1) {
		return usagef("evaluate: --to %s is before --from %s", *to, *from)
	}
	sig, err := parseSignal(*signal)
	if err != nil {
		return usagef("evaluate: --signal: %v", err)
	}
	zs, err := parseZones(*zones)
	if err != nil {
		return usagef("evaluate: --zones: %v", err)
	}
	tables, err := loadData(*data, stderr)
	if err != nil {
		return err
	}
	t0 := time.Now()
	rep, err := workflow.Evaluate(ctx, tables, *modelsDir, workflow.EvalConfig{Signal: sig, From: d1, To: d2, Zones: zs})
	if err != nil {
		return err
	}
	if *format == "json" {
		scored, skipped := rep.Counts()
		fmt.Fprintf(stderr, "evaluate: %d issue days scored, %d skipped, in %.1fs\n", scored, skipped, time.Since(t0).Seconds())
		return backtest.WriteJSON(stdout, rep)
	}
	return backtest.WriteTable(stdout, rep)
}
