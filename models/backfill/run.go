package backfill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// Config is one backfill run.
type Config struct {
	Plan   Plan
	Signal forecast.Signal
	// Job is the checkpoint key; see JobKey. Required.
	Job string
	// Models has the model of every zone of the plan.
	Models  map[forecast.Zone]Model
	History History
	Store   store.Forecasts
	// Workers is the number of model calls in flight (default 2).
	Workers int
	// Batch is B, the units per model call, 1..MaxBatch (default MaxBatch).
	Batch int
	// WriteUnits is the number of units per WriteForecasts call (default
	// 512, about 49k rows of 96 hours); finished units are written at
	// the latest FlushEvery after the last write (default 2 s).
	WriteUnits int
	FlushEvery time.Duration
	// Retry configures the model calls (Next is set per zone). Writes
	// failing with EUNAVAILABLE are retried with the same backoff.
	Retry Retry
	// OnStart, when set, is called once with the number of units to
	// compute, before the first model call. OnWrite is called after each
	// write with the units and rows it stored, from one goroutine.
	OnStart func(units int)
	OnWrite func(units, rows int)
	Logger  *slog.Logger
}

// Result is what a run did.
type Result struct {
	Job     string
	Planned int                   // units of this shard
	Resumed int                   // units already written by an earlier run of the job
	Written int                   // units written by this run
	Rows    int                   // rows written by this run
	Skipped map[forecast.Zone]int // units skipped: a gap in their history window
	Failed  int                   // units whose model call failed
	Elapsed time.Duration
}

// SkippedTotal returns the units skipped over every zone.
func (r Result) SkippedTotal() int {
	n := 0
	for _, v := range r.Skipped {
		n += v
	}
	return n
}

// batch is one model call's worth of units of one zone.
type batch struct {
	zone   forecast.Zone
	units  []store.Unit
	inputs []Input
}

// written is what one batch produced.
type written struct {
	units []store.Unit
	rows  []store.ForecastRow
}

// Run issues the plan's pending forecasts and writes them. It returns the
// Result so far with the error: EINVALID for a bad config (naming the
// field) or when no zone has any history in the plan's range (field
// "from"); EUNAVAILABLE when every pending unit was skipped for gaps; the
// model's or the store's error once retries are spent — units finished
// before it are written first, so a rerun resumes after them.
func Run(ctx context.Context, cfg Config) (Result, error) {
	t0 := time.Now()
	res := Result{Job: cfg.Job, Skipped: map[forecast.Zone]int{}}
	if err := cfg.check(); err != nil {
		return res, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	units := cfg.Plan.Units()
	res.Planned = len(units)
	done, err := cfg.Store.Done(ctx, cfg.Job)
	if err != nil {
		return res, fmt.Errorf("read the checkpoint of job %s: %w", cfg.Job, err)
	}
	pending := Pending(units, done)
	res.Resumed = len(units) - len(pending)
	if res.Resumed > 0 {
		log.Info("resuming backfill", "job", cfg.Job, "done", res.Resumed, "pending", len(pending))
	}
	batches, err := cfg.prepare(ctx, pending, res.Skipped)
	if err != nil {
		return res, err
	}
	todo := 0
	for _, b := range batches {
		todo += len(b.units)
	}
	if cfg.OnStart != nil {
		cfg.OnStart(todo)
	}
	if len(pending) > 0 && todo == 0 {
		res.Elapsed = time.Since(t0)
		return res, forecast.Errorf(forecast.EUNAVAILABLE, "no forecast could be issued: every pending unit's history window has a gap")
	}
	err = cfg.execute(ctx, batches, &res, log)
	res.Elapsed = time.Since(t0)
	return res, err
}

func (cfg *Config) check() error {
	if err := cfg.Plan.Validate(); err != nil {
		return err
	}
	switch {
	case cfg.Job == "":
		return forecast.FieldErrorf(forecast.EINVALID, "job", "no job key")
	case cfg.Signal == "":
		return forecast.FieldErrorf(forecast.EINVALID, "signal", "no signal")
	case cfg.History == nil || cfg.Store == nil:
		return forecast.Errorf(forecast.EINVALID, "a backfill needs a history source and a store")
	case cfg.Batch < 0 || cfg.Batch > MaxBatch:
		return forecast.FieldErrorf(forecast.EINVALID, "batch", "batch %d is not in 1..%d", cfg.Batch, MaxBatch)
	case cfg.Workers < 0:
		return forecast.FieldErrorf(forecast.EINVALID, "workers", "workers %d is negative", cfg.Workers)
	}
	for _, z := range cfg.Plan.Zones {
		m, ok := cfg.Models[z]
		if !ok || m.Predictor == nil {
			return forecast.FieldErrorf(forecast.EINVALID, "model", "no model for zone %s", z)
		}
		if m.Lookback <= 0 || m.Horizon <= 0 || m.Name == "" {
			return forecast.FieldErrorf(forecast.EINVALID, "model", "model of zone %s declares no name, lookback or horizon", z)
		}
		if h := cfg.Plan.HorizonHours(); h > m.Horizon {
			return forecast.FieldErrorf(forecast.EINVALID, "horizon", "horizon %d h is longer than model %s's %d h", h, m.Name, m.Horizon)
		}
	}
	return nil
}

// prepare reads each zone's history once and cuts the pending units into
// batches of history windows (slices of that history, not copies),
// counting the units whose window has a gap.
func (cfg *Config) prepare(ctx context.Context, pending []store.Unit, skipped map[forecast.Zone]int) ([]batch, error) {
	if len(pending) == 0 {
		return nil, nil
	}
	size := cmp.Or(cfg.Batch, MaxBatch)
	zones, groups := byZone(pending)
	var out []batch
	seen := false
	for _, z := range zones {
		us := groups[z]
		m := cfg.Models[z]
		from := us[0].IssuedAt.Add(-time.Duration(m.Lookback) * forecast.Hour)
		to := us[len(us)-1].IssuedAt
		s, err := cfg.History.Series(ctx, z, cfg.Signal, from, to)
		if err != nil && forecast.ErrorCode(err) != forecast.ENOTFOUND {
			return nil, fmt.Errorf("read the history of zone %s: %w", z, err)
		}
		if err == nil && anyObserved(s) {
			seen = true
		}
		cur := batch{zone: z}
		for _, u := range us {
			h, ok := window(s, u.IssuedAt, m.Lookback)
			if !ok {
				skipped[z]++
				continue
			}
			cur.units = append(cur.units, u)
			cur.inputs = append(cur.inputs, Input{History: h, Start: u.IssuedAt})
			if len(cur.units) == size {
				out = append(out, cur)
				cur = batch{zone: z}
			}
		}
		if len(cur.units) > 0 {
			out = append(out, cur)
		}
	}
	if !seen {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "from", "no %s history of zones %v from %s to %s: nothing to forecast from in this range",
			cfg.Signal, zones, pending[0].IssuedAt.Format(time.RFC3339), cfg.Plan.To.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// execute runs the batches on the workers and writes what they produce.
func (cfg *Config) execute(ctx context.Context, batches []batch, res *Result, log *slog.Logger) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	jobs := make(chan batch)
	results := make(chan written, cmp.Or(cfg.Workers, 2))
	var mu sync.Mutex
	var callErr error
	fail := func(b batch, err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Failed += len(b.units)
		if callErr == nil {
			callErr = err
			stop()
		}
	}
	var wg sync.WaitGroup
	for range cmp.Or(cfg.Workers, 2) {
		wg.Go(func() {
			for b := range jobs {
				if wctx.Err() != nil {
					// Stopped: the producer's select may still hand
					// out a batch; it is counted as failed below,
					// never sent to the model.
					continue
				}
				w, err := cfg.call(wctx, b, log)
				if err != nil {
					fail(b, err)
					continue
				}
				results <- w
			}
		})
	}
	go func() {
		defer close(jobs)
		for _, b := range batches {
			select {
			case jobs <- b:
			case <-wctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	writeErr := cfg.writeAll(ctx, results, res, stop)
	// Units never handed to a worker after a failure count as failed too.
	mu.Lock()
	defer mu.Unlock()
	if callErr != nil || writeErr != nil {
		res.Failed = 0
		for _, b := range batches {
			res.Failed += len(b.units)
		}
		res.Failed -= res.Written
	}
	switch {
	case writeErr != nil:
		return writeErr
	case callErr != nil:
		return callErr
	}
	return ctx.Err()
}

// call runs one batch through the zone's model, with retries.
func (cfg *Config) call(ctx context.Context, b batch, log *slog.Logger) (written, error) {
	m := cfg.Models[b.zone]
	r := cfg.Retry
	r.Next = m.Predictor
	r.OnRetry = func(attempt int, wait time.Duration, err error) {
		log.Warn("model call failed; retrying", "model", m.Name, "zone", b.zone, "attempt", attempt, "retry_in", wait.String(), "error", err)
	}
	outs, err := r.Predict(ctx, b.inputs)
	if err != nil {
		return written{}, fmt.Errorf("model %s (zone %s): %w", m.Name, b.zone, err)
	}
	if len(outs) != len(b.inputs) {
		return written{}, forecast.Errorf(forecast.EINVALID, "model %s returned %d forecasts for %d inputs", m.Name, len(outs), len(b.inputs))
	}
	hours := cfg.Plan.HorizonHours()
	rows := make([]store.ForecastRow, 0, len(outs)*hours)
	for i, o := range outs {
		if err := checkOutput(m, o, hours); err != nil {
			return written{}, err
		}
		t := b.units[i].IssuedAt
		for h := range hours {
			r := store.ForecastRow{
				Zone: b.zone, Signal: cfg.Signal, ModelName: m.Name, ModelVersion: m.Version,
				IssuedAt: t, TargetTime: t.Add(time.Duration(h) * forecast.Hour),
				Value: o.Values[h], Lower: math.NaN(), Upper: math.NaN(),
			}
			if o.Lower != nil {
				r.Lower, r.Upper = o.Lower[h], o.Upper[h]
			}
			rows = append(rows, r)
		}
	}
	return written{units: b.units, rows: rows}, nil
}

// writeAll gathers results into writes of WriteUnits units (or what is
// there FlushEvery after the last write) until results is closed. A write
// that fails after its retries stops the workers; what is still gathered
// then is not written (its units stay pending for a rerun).
func (cfg *Config) writeAll(ctx context.Context, results <-chan written, res *Result, stop func()) error {
	limit := cmp.Or(cfg.WriteUnits, 512)
	every := cmp.Or(cfg.FlushEvery, 2*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var units []store.Unit
	var rows []store.ForecastRow
	var werr error
	flush := func() {
		if len(units) == 0 || werr != nil {
			return
		}
		if werr = cfg.write(ctx, units, rows); werr != nil {
			stop()
			return
		}
		res.Written += len(units)
		res.Rows += len(rows)
		if cfg.OnWrite != nil {
			cfg.OnWrite(len(units), len(rows))
		}
		units, rows = units[:0], rows[:0]
		// A tick that fell during a write longer than every would flush
		// the few units gathered meanwhile at once: on a store whose
		// writes cost a fixed REFRESH or commit, many small writes.
		tick.Reset(every)
	}
	for {
		select {
		case w, ok := <-results:
			if !ok {
				flush()
				return werr
			}
			units = append(units, w.units...)
			rows = append(rows, w.rows...)
			if len(units) >= limit {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// write stores one write with retries on EUNAVAILABLE. Once ctx ends, the
// finished units still get one attempt within a short grace period, so a
// SIGTERM does not throw away work.
func (cfg *Config) write(ctx context.Context, units []store.Unit, rows []store.ForecastRow) error {
	if ctx.Err() != nil {
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return cfg.Store.WriteForecasts(gctx, cfg.Job, slices.Clone(units), rows)
	}
	r := cfg.Retry
	r.Timeout = 2 * time.Minute
	r.Attempts = max(r.Attempts, 6)
	r.Next = predictorFunc(func(ctx context.Context, _ []Input) ([]Output, error) {
		return nil, cfg.Store.WriteForecasts(ctx, cfg.Job, units, rows)
	})
	if cfg.Logger != nil {
		r.OnRetry = func(attempt int, wait time.Duration, err error) {
			cfg.Logger.Warn("store write failed; retrying", "job", cfg.Job, "units", len(units), "attempt", attempt, "retry_in", wait.String(), "error", err)
		}
	}
	_, err := r.Predict(ctx, nil)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("write %d forecasts to the store: %w", len(units), err)
	}
	return err
}
