package backfill

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/models"
)

// recorder is a model whose forecast is the last history value plus the
// lead hour; it records, per start, the last history value it saw.
type recorder struct {
	meta models.Meta
	mu   sync.Mutex
	last map[int64]float64
}

func newRecorder(lookback, horizon int) *recorder {
	return &recorder{meta: models.Meta{Name: "rec", Signal: forecast.SignalDirect, Lookback: lookback, Horizon: horizon}, last: map[int64]float64{}}
}

func (r *recorder) Meta() models.Meta { return r.meta }

func (r *recorder) Predict(history []float64, start time.Time, out []float64) error {
	if len(history) != r.meta.Lookback {
		return forecast.Errorf(forecast.EINVALID, "history of %d", len(history))
	}
	r.mu.Lock()
	r.last[start.Unix()] = history[len(history)-1]
	r.mu.Unlock()
	for i := range out {
		out[i] = history[len(history)-1] + float64(i)
	}
	return nil
}

// batchPredictor wraps a predictor and records batch sizes.
type batchPredictor struct {
	next  Predictor
	mu    sync.Mutex
	sizes []int
}

func (b *batchPredictor) Predict(ctx context.Context, batch []Input) ([]Output, error) {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(batch))
	b.mu.Unlock()
	return b.next.Predict(ctx, batch)
}

// hourIndex returns a series over [from, to) whose value is the Unix hour,
// NaN at the given hours.
func hourIndex(from, to time.Time, gaps ...time.Time) forecast.Series {
	s := nanSeries(from, to)
	for i := range s.Values {
		s.Values[i] = float64(s.Start.Unix()/3600 + int64(i))
	}
	for _, g := range gaps {
		if i, ok := s.Index(g); ok {
			s.Values[i] = math.NaN()
		}
	}
	return s
}

type seriesTable forecast.Series

func (s seriesTable) Series(forecast.Signal) forecast.Series { return forecast.Series(s) }

func config(t *testing.T, plan Plan, h History, p Predictor, lookback, horizon int) (Config, *store.Memory) {
	t.Helper()
	mem := store.NewMemory()
	ms := map[forecast.Zone]Model{}
	for _, z := range plan.Zones {
		ms[z] = Model{Name: "rec-" + string(z), Version: "1", Lookback: lookback, Horizon: horizon, Predictor: p}
	}
	return Config{
		Plan: plan, Signal: forecast.SignalDirect, Job: "job-" + t.Name(), Models: ms, History: h, Store: mem,
		Retry: Retry{Sleep: func(context.Context, time.Duration) error { return nil }}, WriteUnits: 5,
	}, mem
}

func countRows(t *testing.T, mem *store.Memory) (rows int, keys map[store.Key]bool) {
	t.Helper()
	keys = map[store.Key]bool{}
	err := mem.ReadForecasts(context.Background(), store.ForecastQuery{}, func(r store.ForecastRow) error {
		rows++
		keys[r.Key()] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, keys
}

func TestRunHistoryStrictlyBeforeIssueTime(t *testing.T) {
	t.Parallel()
	plan := testPlan([]forecast.Zone{"DE", "SE"}, 20)
	plan.Horizon = 5 * time.Hour
	rec := newRecorder(24, 6)
	s := hourIndex(day0.AddDate(0, 0, -3), day0.AddDate(0, 1, 0))
	tables := map[forecast.Zone]seriesTable{"DE": seriesTable(s), "SE": seriesTable(s)}
	cfg, mem := config(t, plan, TableHistory[seriesTable]{Tables: tables}, InProcess{Model: rec}, 24, 6)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Written, 40; got != want {
		t.Fatalf("written=%d, want %d", got, want)
	}
	for _, tm := range plan.IssueTimes() {
		want := float64(tm.Unix()/3600 - 1) // the hour before T, never T itself
		if got := rec.last[tm.Unix()]; got != want {
			t.Errorf("issued at %s: last history value %v, want %v (the hour before)", tm.Format(time.RFC3339), got, want)
		}
	}
	rows, keys := countRows(t, mem)
	if rows != 40*5 || len(keys) != rows {
		t.Fatalf("rows=%d distinct=%d, want %d", rows, len(keys), 40*5)
	}
	// Values come from the model: last history value + lead hour.
	err = mem.ReadForecasts(context.Background(), store.ForecastQuery{}, func(r store.ForecastRow) error {
		lead := r.TargetTime.Sub(r.IssuedAt) / time.Hour
		if want := float64(r.IssuedAt.Unix()/3600-1) + float64(lead); r.Value != want {
			t.Errorf("%s %s+%d: value %v, want %v", r.Zone, r.IssuedAt.Format(time.RFC3339), lead, r.Value, want)
		}
		if r.ModelName != "rec-"+string(r.Zone) || r.ModelVersion != "1" || r.HasInterval() {
			t.Errorf("row key %+v", r.Key())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRunSkipsGapsAndBatches(t *testing.T) {
	t.Parallel()
	plan := testPlan([]forecast.Zone{"DE", "SE"}, 200)
	plan.Every = 6 * time.Hour
	plan.To = day0.AddDate(0, 0, 49)
	gap := day0.AddDate(0, 0, 10).Add(5 * time.Hour)
	s := hourIndex(day0.AddDate(0, 0, -2), day0.AddDate(0, 3, 0))
	sGap := hourIndex(day0.AddDate(0, 0, -2), day0.AddDate(0, 3, 0), gap)
	tables := map[forecast.Zone]seriesTable{"DE": seriesTable(sGap), "SE": seriesTable(s)}
	bp := &batchPredictor{next: InProcess{Model: newRecorder(24, 96)}}
	cfg, mem := config(t, plan, TableHistory[seriesTable]{Tables: tables}, bp, 24, 96)
	cfg.Batch = 7
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Issue times every 6 h: those whose 24 h window holds the gap hour
	// are the four after it (gap+1h .. gap+24h covers 4 issue times).
	units := len(plan.IssueTimes())
	wantSkipped := 0
	for _, tm := range plan.IssueTimes() {
		if !gap.Before(tm.Add(-24*time.Hour)) && gap.Before(tm) {
			wantSkipped++
		}
	}
	if wantSkipped == 0 {
		t.Fatal("test setup: the gap skips nothing")
	}
	if got := res.Skipped["DE"]; got != wantSkipped {
		t.Errorf("skipped DE=%d, want %d", got, wantSkipped)
	}
	if got := res.Skipped["SE"]; got != 0 {
		t.Errorf("skipped SE=%d, want 0", got)
	}
	if got, want := res.Written, 2*units-wantSkipped; got != want {
		t.Errorf("written=%d, want %d", got, want)
	}
	rows, _ := countRows(t, mem)
	if got, want := rows, res.Written*96; got != want {
		t.Errorf("rows=%d, want %d", got, want)
	}
	total := 0
	for _, n := range bp.sizes {
		if n < 1 || n > 7 {
			t.Errorf("batch of %d, want 1..7", n)
		}
		total += n
	}
	if total != res.Written {
		t.Errorf("batched %d units, wrote %d", total, res.Written)
	}
}

func TestRunBatchNeverAboveMax(t *testing.T) {
	t.Parallel()
	plan := testPlan([]forecast.Zone{"DE"}, 300)
	plan.Every = time.Hour
	s := hourIndex(day0.AddDate(0, 0, -2), day0.AddDate(0, 1, 0))
	bp := &batchPredictor{next: InProcess{Model: newRecorder(24, 96)}}
	cfg, _ := config(t, plan, TableHistory[seriesTable]{Tables: map[forecast.Zone]seriesTable{"DE": seriesTable(s)}}, bp, 24, 96)
	plan.To = day0.Add(299 * time.Hour)
	cfg.Plan = plan
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, n := range bp.sizes {
		if n > MaxBatch {
			t.Errorf("batch of %d > %d", n, MaxBatch)
		}
		if n == MaxBatch {
			full++
		}
	}
	if full != 300/MaxBatch {
		t.Errorf("%d full batches, want %d", full, 300/MaxBatch)
	}
}

func TestRunNoHistory(t *testing.T) {
	t.Parallel()
	plan := testPlan([]forecast.Zone{"DE"}, 5)
	s := hourIndex(day0.AddDate(1, 0, 0), day0.AddDate(1, 1, 0)) // a year later
	cfg, mem := config(t, plan, TableHistory[seriesTable]{Tables: map[forecast.Zone]seriesTable{"DE": seriesTable(s)}}, InProcess{Model: newRecorder(24, 96)}, 24, 96)
	_, err := Run(context.Background(), cfg)
	if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "from" {
		t.Fatalf("err=%v, want EINVALID naming from", err)
	}
	if rows, _ := countRows(t, mem); rows != 0 {
		t.Errorf("%d rows written", rows)
	}
}

// flaky fails with EUNAVAILABLE from its failFrom-th call on (after
// succeeding before), or for its first failFirst calls.
type flaky struct {
	next                Predictor
	mu                  sync.Mutex
	calls               int
	failFirst, failFrom int
}

func (f *flaky) Predict(ctx context.Context, batch []Input) ([]Output, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if n <= f.failFirst || (f.failFrom > 0 && n >= f.failFrom) {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "server down (call %d)", n)
	}
	return f.next.Predict(ctx, batch)
}

func TestRunStopsAfterRetriesThenResumes(t *testing.T) {
	t.Parallel()
	plan := testPlan([]forecast.Zone{"DE", "SE"}, 100)
	s := hourIndex(day0.AddDate(0, 0, -2), day0.AddDate(0, 5, 0))
	tables := map[forecast.Zone]seriesTable{"DE": seriesTable(s), "SE": seriesTable(s)}
	f := &flaky{next: InProcess{Model: newRecorder(24, 96)}, failFrom: 3}
	cfg, mem := config(t, plan, TableHistory[seriesTable]{Tables: tables}, f, 24, 96)
	cfg.Batch, cfg.Workers = 10, 1
	res, err := Run(context.Background(), cfg)
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("err=%v, want EUNAVAILABLE", err)
	}
	if res.Written != 20 || res.Failed != 180 {
		t.Errorf("written=%d failed=%d, want the 2 batches before the failure (20) and 180", res.Written, res.Failed)
	}
	if got, want := f.calls, 2+4; got != want {
		t.Errorf("calls=%d, want 2 good + 4 attempts", got)
	}
	done, _ := mem.Done(context.Background(), cfg.Job)
	rows, _ := countRows(t, mem)
	if len(done) != res.Written || rows != res.Written*96 {
		t.Fatalf("checkpoint %d units, %d rows; want %d units, %d rows", len(done), rows, res.Written, res.Written*96)
	}
	// The server is back: a rerun resumes and completes.
	cfg.Models = map[forecast.Zone]Model{}
	for _, z := range plan.Zones {
		cfg.Models[z] = Model{Name: "rec-" + string(z), Version: "1", Lookback: 24, Horizon: 96, Predictor: InProcess{Model: newRecorder(24, 96)}}
	}
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumed != 20 || res.Written != 180 {
		t.Errorf("rerun resumed=%d written=%d, want 20 and 180", res.Resumed, res.Written)
	}
	rows, keys := countRows(t, mem)
	if rows != 200*96 || len(keys) != rows {
		t.Errorf("rows=%d distinct=%d, want %d", rows, len(keys), 200*96)
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	ok := InProcess{Model: newRecorder(2, 2)}
	in := []Input{{History: []float64{1, 2}, Start: day0}}
	tests := []struct {
		note      string
		next      Predictor
		attempts  int
		wantErr   string
		wantCalls int
		wantWaits []time.Duration
	}{
		{"success", &flaky{next: ok}, 4, "", 1, nil},
		// Rand 0.5: each wait is 3/4 of its nominal value (100, 200, 300 ms).
		{"recovers", &flaky{next: ok, failFirst: 2}, 4, "", 3, []time.Duration{75 * time.Millisecond, 150 * time.Millisecond}},
		{"gives up", &flaky{next: ok, failFirst: 10}, 5, forecast.EUNAVAILABLE, 5,
			[]time.Duration{75 * time.Millisecond, 150 * time.Millisecond, 225 * time.Millisecond, 225 * time.Millisecond}},
		{"not retryable", predictorFunc(func(context.Context, []Input) ([]Output, error) {
			return nil, forecast.Errorf(forecast.EINVALID, "bad batch")
		}), 4, forecast.EINVALID, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			var waits []time.Duration
			calls := 0
			r := Retry{
				Next: predictorFunc(func(ctx context.Context, b []Input) ([]Output, error) {
					calls++
					if _, ok := ctx.Deadline(); !ok {
						t.Error("call without a deadline")
					}
					return tt.next.Predict(ctx, b)
				}),
				Attempts: tt.attempts, Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
				Rand:  func() float64 { return 0.5 },
			}
			out, err := r.Predict(context.Background(), in)
			if got := forecast.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("err=%v, want code %q", err, tt.wantErr)
			}
			if err == nil && len(out) != 1 {
				t.Errorf("outputs=%d", len(out))
			}
			if calls != tt.wantCalls {
				t.Errorf("calls=%d, want %d", calls, tt.wantCalls)
			}
			if len(waits) != len(tt.wantWaits) {
				t.Fatalf("waits=%v, want %v", waits, tt.wantWaits)
			}
			for i := range waits {
				if waits[i] != tt.wantWaits[i] {
					t.Errorf("waits=%v, want %v", waits, tt.wantWaits)
				}
			}
		})
	}
}

// TestRetryShardsApart: shards whose model calls fail at the same moment
// (a restarted server) wait different pauses before each retry, drawn
// from the default random source, instead of coming back together.
func TestRetryShardsApart(t *testing.T) {
	t.Parallel()
	const shards, attempts = 8, 4
	waits := make([][]time.Duration, shards)
	var wg sync.WaitGroup
	for i := range shards {
		wg.Go(func() {
			r := Retry{
				Next: predictorFunc(func(context.Context, []Input) ([]Output, error) {
					return nil, forecast.Errorf(forecast.EUNAVAILABLE, "connection refused")
				}),
				Attempts: attempts,
				Sleep:    func(_ context.Context, d time.Duration) error { waits[i] = append(waits[i], d); return nil },
			}
			if _, err := r.Predict(context.Background(), nil); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
				t.Errorf("shard %d: err=%v, want EUNAVAILABLE", i, err)
			}
		})
	}
	wg.Wait()
	for a := range attempts - 1 {
		seen := map[time.Duration]int{}
		for i := range shards {
			if len(waits[i]) != attempts-1 {
				t.Fatalf("shard %d waited %v, want %d waits", i, waits[i], attempts-1)
			}
			nominal := 250 * time.Millisecond << a
			if w := waits[i][a]; w < nominal/2 || w > nominal {
				t.Errorf("shard %d wait %d = %v, want in [%v, %v]", i, a+1, w, nominal/2, nominal)
			}
			if j, dup := seen[waits[i][a]]; dup {
				t.Errorf("shards %d and %d both wait %v before retry %d (lock-step)", j, i, waits[i][a], a+1)
			}
			seen[waits[i][a]] = i
		}
	}
}

func TestRetryStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	r := Retry{
		Next: predictorFunc(func(context.Context, []Input) ([]Output, error) {
			cancel()
			return nil, forecast.Errorf(forecast.EUNAVAILABLE, "down")
		}),
		Attempts: 10,
	}
	if _, err := r.Predict(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err=%v, want context.Canceled", err)
	}
}
