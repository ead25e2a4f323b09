package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/models/ridge"
	"github.com/carbongate/carbongate/models/workflow"
)

// runTrain fits per-zone and generic models on data before --until and
// writes them under --out as MLflow model directories.
func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train", stdout)
	data := fs.String("data", "", "data `dir` (<zone>.csv files or <zone>/ folders), or bundled for the embedded data")
	until := fs.String("until", "", "training cut-off (RFC 3339 or YYYY-MM-DD, UTC): only data strictly before it is used")
	out := fs.String("out", "", "models `dir` to write: <signal>/<ZONE>/ and <signal>/generic/")
	zones := fs.String("zones", "", "comma-separated zone ids (default: every zone of the data)")
	signal := fs.String("signal", "both", "signal to train: direct, lifecycle or both")
	def := ridge.DefaultConfig()
	interval := fs.Float64("interval", def.Interval, "nominal coverage of the ridge models' prediction interval, in (0, 1); 0: point forecasts only")
	folds := fs.Int("folds", def.Folds, "blocked cross-validation folds inside the training data (λ per lead day, interval calibration); 0: the default λ, no interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *data == "" || *until == "" || *out == "" {
		return usagef("--data, --until and --out are required")
	}
	cut, err := parseTime(*until)
	if err != nil {
		return usagef("--until: %v", err)
	}
	zs, err := parseZones(*zones)
	if err != nil {
		return usagef("--zones: %v", err)
	}
	var sigs []forecast.Signal
	if *signal != "both" {
		s, err := parseSignal(*signal)
		if err != nil {
			return usagef("--signal: %v", err)
		}
		sigs = []forecast.Signal{s}
	}
	rc, err := ridgeConfig(def, *interval, *folds)
	if err != nil {
		return err
	}
	tables, err := loadData(*data, stderr)
	if err != nil {
		return err
	}
	t0 := time.Now()
	res, err := workflow.Train(ctx, tables, *out, workflow.TrainConfig{
		Until: cut, Zones: zs, Signals: sigs, Ridge: rc,
		Progress: func(r workflow.Result) {
			zone := string(r.Zone)
			if zone == "" {
				zone = workflow.GenericDir
			}
			fmt.Fprintf(stdout, "trained %-12s %-9s %-30s %6d samples %6.2fs\n", zone, r.Signal, r.Name, r.Samples, r.Elapsed.Seconds())
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d models in %s (data before %s) in %.1fs\n", len(res), *out, cut.Format(time.RFC3339), time.Since(t0).Seconds())
	return nil
}

// ridgeConfig applies --interval and --folds to the default configuration.
func ridgeConfig(c ridge.Config, interval float64, folds int) (ridge.Config, error) {
	c.Interval, c.Folds = interval, folds
	if folds == 0 {
		c.LambdaGrid = nil
		if interval != 0 {
			return c, usagef("--interval needs --folds ≥ 2 (the interval is calibrated on out-of-fold residuals); use --interval 0 for point forecasts")
		}
	}
	if err := c.Validate(); err != nil {
		flag := "--folds"
		if strings.Contains(forecast.ErrorMessage(err), "interval") {
			flag = "--interval"
		}
		return c, usagef("%s: %s", flag, forecast.ErrorMessage(err))
	}
	return c, nil
}

// loadData loads a data directory, or the embedded data for "bundled", and
// reports every issue the loader found on stderr.
func loadData(dir string, stderr io.Writer) (map[forecast.Zone]*dataset.Table, error) {
	if dir == "bundled" {
		return bundled.Load()
	}
	tables, issues, err := dataset.LoadDir(dir)
	for _, is := range issues {
		fmt.Fprintf(stderr, "data: %s\n", is)
	}
	return tables, err
}

// parseTime reads an RFC 3339 time or a YYYY-MM-DD date (UTC midnight).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither YYYY-MM-DD nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

func parseZones(s string) ([]forecast.Zone, error) {
	var zs []forecast.Zone
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		z, err := forecast.ParseZone(f)
		if err != nil {
			return nil, err
		}
		zs = append(zs, z)
	}
	return zs, nil
}

// parseSignal is strict: the flag must name the signal (no default).
func parseSignal(s string) (forecast.Signal, error) {
	switch forecast.Signal(s) {
	case forecast.SignalDirect, forecast.SignalLifecycle:
		return forecast.Signal(s), nil
	}
	return "", fmt.Errorf("%q is not one of direct, lifecycle", s)
}
