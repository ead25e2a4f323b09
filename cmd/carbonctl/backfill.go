package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/store"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/backfill"
	"github.com/carbongate/carbongate/models/backfill/progress"
	"github.com/carbongate/carbongate/registry"
	regconnect "github.com/carbongate/carbongate/registry/connect"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/s3"
)

// Environment variables of --store and --registry (a Kubernetes Job sets
// them from a Secret, so no credential is on the command line).
var (
	envStore    = cli.EnvName("store")
	envRegistry = cli.EnvName("registry")
)

// backfillOpts are the flags of carbonctl backfill; deploy render --backfill
// declares the same ones and passes them on to the Job's pods.
type backfillOpts struct {
	zones, from, to       string
	every, horizon        time.Duration
	model, models         string
	endpoint, registry    string
	artifactsDestination  string
	fetch                 fetch.Fetcher // --artifact-sources, --artifact-max-bytes
	store, data, signal   string
	job                   string
	workers, batch        int
	shards, shardIndex    int
	writeUnits, attempts  int
	callTimeout, interval time.Duration
	migrate               bool
}

// register declares the flags on fs.
func (o *backfillOpts) register(fs *flag.FlagSet) {
	fs.StringVar(&o.zones, "zones", "", "comma-separated zone ids (required)")
	fs.StringVar(&o.from, "from", "", "first issue time: YYYY-MM-DD, RFC 3339 on the hour, or now/today minus whole hours, e.g. today-24h (required)")
	fs.StringVar(&o.to, "to", "", "last issue time, inclusive: like --from (required)")
	fs.DurationVar(&o.every, "every", 24*time.Hour, "time between issue times, whole hours")
	fs.DurationVar(&o.horizon, "horizon", 96*time.Hour, "hours forecast at each issue time")
	fs.StringVar(&o.model, "model", "models:/"+models.NamePrefix+"{zone}@champion", "registered model `URI` ({zone} is replaced by each zone); with --endpoint, names the OIP model")
	fs.StringVar(&o.models, "models", "", "models `dir` written by carbonctl train, run in process (instead of the registry)")
	fs.StringVar(&o.endpoint, "endpoint", "", "OIP server `URL` to call instead of loading models: http(s)://host:port (REST) or grpc://host:port; {zone} allowed")
	fs.StringVar(&o.registry, "registry", "", "model registry of --model: postgres://, crate://, http(s):// or a file (default $CARBONGATE_REGISTRY, then $MLFLOW_TRACKING_URI; token from $MLFLOW_TRACKING_TOKEN)")
	fs.StringVar(&o.artifactsDestination, "artifacts-destination", "", "where mlflow-artifacts:/ locations live (the MLflow server's --artifacts-destination); versions are fetched from under it")
	o.fetch.Flags(fs)
	fs.StringVar(&o.store, "store", "", "forecast store `URL`: postgres:// or crate://")
	fs.StringVar(&o.data, "data", "", "history from a data `dir` or bundled (default: the store's observed signals)")
	fs.StringVar(&o.signal, "signal", string(forecast.SignalLifecycle), "signal: direct or lifecycle")
	fs.StringVar(&o.job, "job", "", "checkpoint key (default: a hash of model, signal, zones, range, step, horizon and shard)")
	fs.IntVar(&o.workers, "workers", 2, "model calls in flight")
	fs.IntVar(&o.batch, "batch", backfill.MaxBatch, "forecasts per model call (1..64)")
	fs.IntVar(&o.shards, "shards", 1, "number of shards the backfill is split into")
	fs.IntVar(&o.shardIndex, "shard-index", 0, "the shard this process runs, 0..shards-1")
	fs.IntVar(&o.writeUnits, "write-units", 512, "forecasts per store write (one transaction with its checkpoint)")
	fs.IntVar(&o.attempts, "attempts", 4, "attempts per model call when the model is unavailable")
	fs.DurationVar(&o.callTimeout, "call-timeout", 30*time.Second, "deadline of one model call")
	fs.DurationVar(&o.interval, "progress-interval", 5*time.Second, "time between progress lines when stderr is not a terminal")
	fs.BoolVar(&o.migrate, "migrate", true, "create the store's tables when absent")
}

// plan checks the flags that shape the plan and returns it.
func (o *backfillOpts) plan() (backfill.Plan, forecast.Signal, error) {
	if o.zones == "" || o.from == "" || o.to == "" {
		return backfill.Plan{}, "", usagef("--zones, --from and --to are required")
	}
	zs, err := parseZones(o.zones)
	if err != nil {
		return backfill.Plan{}, "", usagef("--zones: %s", forecast.ErrorMessage(err))
	}
	now := time.Now()
	from, err := parseWhen(o.from, now)
	if err != nil {
		return backfill.Plan{}, "", usagef("--from: %v", err)
	}
	to, err := parseWhen(o.to, now)
	if err != nil {
		return backfill.Plan{}, "", usagef("--to: %v", err)
	}
	sig, err := parseSignal(o.signal)
	if err != nil {
		return backfill.Plan{}, "", usagef("--signal: %v", err)
	}
	modes := 0
	for _, s := range []string{o.models, o.endpoint} {
		if s != "" {
			modes++
		}
	}
	switch {
	case modes > 1:
		return backfill.Plan{}, "", usagef("--models and --endpoint exclude each other")
	case o.batch < 1 || o.batch > backfill.MaxBatch:
		return backfill.Plan{}, "", usagef("--batch: %d is not in 1..%d", o.batch, backfill.MaxBatch)
	case o.workers < 1:
		return backfill.Plan{}, "", usagef("--workers: %d must be at least 1", o.workers)
	case o.writeUnits < 1:
		return backfill.Plan{}, "", usagef("--write-units: %d must be at least 1", o.writeUnits)
	case o.attempts < 1:
		return backfill.Plan{}, "", usagef("--attempts: %d must be at least 1", o.attempts)
	case o.callTimeout <= 0:
		return backfill.Plan{}, "", usagef("--call-timeout: %v must be positive", o.callTimeout)
	case o.shards < 1:
		return backfill.Plan{}, "", usagef("--shards: %d must be at least 1", o.shards)
	}
	p := backfill.Plan{Zones: zs, From: from, To: to, Every: o.every, Horizon: o.horizon, Shards: o.shards, ShardIndex: o.shardIndex}
	if err := p.Validate(); err != nil {
		return backfill.Plan{}, "", usagef("%s: %s", backfillFlag(forecast.ErrorField(err)), forecast.ErrorMessage(err))
	}
	return p, sig, nil
}

// backfillFlag maps a field of a backfill error to its flag.
func backfillFlag(field string) string {
	switch field {
	case "from", "to":
		return "--from/--to"
	case "shard_index":
		return "--shard-index"
	case "":
		return "backfill"
	}
	return "--" + field
}

// runBackfill issues forecasts as they would have been issued over a past
// range and writes them into the forecast store.
func runBackfill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o backfillOpts
	fs := newFlags("backfill", stdout)
	o.register(fs.FlagSet)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.registry == "" {
		o.registry = os.Getenv("MLFLOW_TRACKING_URI")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	plan, sig, err := o.plan()
	if err != nil {
		return err
	}
	if o.store == "" {
		return usagef("--store (or $%s) is required", envStore)
	}
	if _, _, err := storeconnect.Parse(o.store); err != nil {
		return usagef("--store: %s", forecast.ErrorMessage(err))
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := openStore(ctx, o.store, o.migrate)
	if err != nil {
		return err
	}
	defer db.Close()
	ms, desc, versions, closeModels, err := o.loadModels(ctx, sig, plan.Zones)
	if err != nil {
		return err
	}
	defer closeModels()
	hist, err := o.history(db, stderr)
	if err != nil {
		return err
	}
	job := o.job
	if job == "" {
		job = backfill.JobKey(backfill.KeyInput{Model: desc, Versions: versions, Signal: sig, Plan: plan})
	}
	f, isFile := stderr.(*os.File)
	rep := progress.New(stderr, isFile && progress.IsTerminal(f), o.interval)
	started := false
	res, runErr := backfill.Run(ctx, backfill.Config{
		Plan: plan, Signal: sig, Job: job, Models: ms, History: hist, Store: db,
		Workers: o.workers, Batch: o.batch, WriteUnits: o.writeUnits,
		Retry:   backfill.Retry{Attempts: o.attempts, Timeout: o.callTimeout},
		OnStart: func(n int) { rep.Start(n); started = true },
		OnWrite: rep.Add,
		Logger:  log,
	})
	if started {
		rep.Finish()
	}
	fmt.Fprintf(stdout, "backfill: job %s, %d units in shard %d/%d\n", job, res.Planned, plan.ShardIndex, max(plan.Shards, 1))
	zones := make([]forecast.Zone, 0, len(res.Skipped))
	for z := range res.Skipped {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for _, z := range zones {
		fmt.Fprintf(stdout, "backfill: zone %s: %d units skipped (gaps in the history window)\n", z, res.Skipped[z])
	}
	fmt.Fprintln(stdout, progress.SummaryLine(progress.Summary{
		Written: res.Written, Skipped: res.SkippedTotal(), Failed: res.Failed, Resumed: res.Resumed,
		Rows: res.Rows, Elapsed: res.Elapsed,
	}))
	if runErr != nil {
		if f := forecast.ErrorField(runErr); f != "" && forecast.ErrorCode(runErr) == forecast.EINVALID {
			return fmt.Errorf("%s: %s", backfillFlag(f), forecast.ErrorMessage(runErr))
		}
		return runErr
	}
	return nil
}

// openStore opens the forecast store and creates its tables when asked.
func openStore(ctx context.Context, uri string, migrate bool) (store.DB, error) {
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, err := storeconnect.Open(octx, uri)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	if migrate {
		if err := db.Migrate(octx); err != nil {
			db.Close()
			return nil, fmt.Errorf("--store: create tables: %w", err)
		}
	}
	return db, nil
}

// loadModels returns each zone's model, a description of the model source
// for the job key, the resolved versions and a function releasing them.
func (o *backfillOpts) loadModels(ctx context.Context, sig forecast.Signal, zones []forecast.Zone) (map[forecast.Zone]backfill.Model, string, []string, func(), error) {
	var ms map[forecast.Zone]backfill.Model
	var desc string
	release := func() {}
	var err error
	switch {
	case o.models != "":
		desc = "dir:" + o.models
		ms, err = backfill.FromDir(o.models, sig, zones)
	case o.endpoint != "":
		desc = "oip:" + o.endpoint + " " + o.model
		var closers []io.Closer
		ms, closers, err = backfill.FromEndpoints(ctx, o.endpoint, o.model, zones,
			backfill.Retry{Attempts: o.attempts, Timeout: o.callTimeout})
		release = func() {
			for _, c := range closers {
				c.Close()
			}
		}
	default:
		desc = o.model
		ms, release, err = o.fromRegistry(ctx, sig, zones)
	}
	if err != nil {
		return nil, "", nil, nil, modelFlagErr(err, o)
	}
	versions := make([]string, 0, len(zones))
	for _, z := range zones {
		versions = append(versions, fmt.Sprintf("%s=%s@%s", z, ms[z].Name, ms[z].Version))
	}
	return ms, desc, versions, release, nil
}

// fromRegistry resolves --model through --registry into a temp dir.
func (o *backfillOpts) fromRegistry(ctx context.Context, sig forecast.Signal, zones []forecast.Zone) (map[forecast.Zone]backfill.Model, func(), error) {
	if o.registry == "" {
		return nil, nil, usagef("--model %s needs --registry (or $%s); or use --models DIR or --endpoint URL", o.model, envRegistry)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	reg, _, err := regconnect.Open(rctx, o.registry, registry.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("--registry: %w", err)
	}
	defer reg.Close()
	tmp, err := os.MkdirTemp("", "carbonctl-backfill-")
	if err != nil {
		return nil, nil, err
	}
	release := func() { os.RemoveAll(tmp) }
	rs := backfill.RegistrySource{Store: reg, ArtifactsDestination: o.artifactsDestination, Fetch: o.fetch, S3: s3.ConfigFromEnv(os.Getenv), CacheDir: tmp}
	ms, err := rs.Models(ctx, o.model, sig, zones)
	if err != nil {
		release()
		return nil, nil, err
	}
	return ms, release, nil
}

// modelFlagErr names the flag of a model-source error.
func modelFlagErr(err error, o *backfillOpts) error {
	if isUsage(err) {
		return err
	}
	switch forecast.ErrorField(err) {
	case "model":
		return fmt.Errorf("--model %s: %w", o.model, err)
	case "models":
		return fmt.Errorf("--models %s: %w", o.models, err)
	case "endpoint":
		if forecast.ErrorCode(err) == forecast.EINVALID {
			return usagef("--endpoint: %s", forecast.ErrorMessage(err))
		}
		return fmt.Errorf("--endpoint %s: %w", o.endpoint, err)
	}
	return err
}

// history returns the history source: --data, or the store's observations.
func (o *backfillOpts) history(db store.DB, stderr io.Writer) (backfill.History, error) {
	if o.data == "" {
		return backfill.ObservedHistory{Store: db}, nil
	}
	tables, err := loadData(o.data, stderr)
	if err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	return backfill.TableHistory[*dataset.Table]{Tables: tables}, nil
}
