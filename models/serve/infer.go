package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/oip"
)

// buffers is the per-request scratch space, pooled.
type buffers struct {
	hist       []float64   // B×L
	out        []float64   // B×H
	lo, hi     []float64   // B×H, interval models only
	rows       [][]float64 // rows of out
	lrow, hrow [][]float64 // rows of lo and hi
}

// Infer implements oip.Backend under the forecaster tensor contract:
// inputs history FP32 [B, L] and start_unix INT64 [B, 1] (Unix seconds,
// hour-aligned), 1 ≤ B ≤ MaxBatch; output forecast FP32 [B, H] and, for a
// models.IntervalModel, lower and upper FP32 [B, H]. With no requested
// outputs the response holds every output of the model; otherwise exactly
// the requested ones (each must be an output of the model). The response
// echoes req.ID and names the model and the version that answered.
//
// Errors: ENOTFOUND for an unknown model or version, EUNAVAILABLE while the
// model loads, EINVALID for anything in req that does not fit the contract
// (missing, extra or misshapen tensors, non-finite history, a start that is
// not a whole hour, B out of range), the context's error when ctx is done.
func (s *Server) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	t0 := time.Now()
	e, err := s.lookup(model)
	if err != nil {
		s.met.requests.WithLabelValues(unknownModel, forecast.ErrorCode(err)).Inc()
		return nil, err
	}
	resp, b, err := s.infer(ctx, e, version, req)
	status := "ok"
	if err != nil {
		status = forecast.ErrorCode(err)
	} else {
		s.met.batch.WithLabelValues(e.name).Observe(float64(b))
	}
	s.met.requests.WithLabelValues(e.name, status).Inc()
	s.met.latency.WithLabelValues(e.name).Observe(time.Since(t0).Seconds())
	return resp, err
}

func (s *Server) infer(ctx context.Context, e *entry, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	// One load: the whole request runs on this model even if a reload
	// swaps another in meanwhile.
	l, err := current(e, version)
	if err != nil {
		return nil, 0, err
	}
	want, err := wantOutputs(e.name, l.model, req)
	if err != nil {
		return nil, 0, err
	}
	lb, h := l.meta.Lookback, l.meta.Horizon
	rows, starts, err := oip.ParseForecastRequest(req, oip.Contract{Lookback: lb, Horizon: h})
	if err != nil {
		return nil, 0, err
	}
	b := len(rows)
	if b > s.maxBatch {
		return nil, 0, forecast.FieldErrorf(forecast.EINVALID, oip.InputHistory, "batch size %d is above this server's maximum %d", b, s.maxBatch)
	}
	buf, _ := s.scratch.Get().(*buffers)
	if buf == nil {
		buf = new(buffers)
	}
	defer s.putScratch(buf)
	// Predictions go into row-major matrices: flatten the parsed rows and
	// slice the outputs into rows for the response.
	buf.hist = grow(buf.hist, b*lb)
	buf.out = grow(buf.out, b*h)
	buf.rows = growRows(buf.rows, b)
	for i, r := range rows {
		copy(buf.hist[i*lb:(i+1)*lb], r)
		buf.rows[i] = buf.out[i*h : (i+1)*h : (i+1)*h]
	}
	var lower, upper [][]float64
	if im, ok := l.model.(models.IntervalModel); ok && (want == nil || want[oip.OutputLower] || want[oip.OutputUpper]) {
		buf.lo, buf.hi = grow(buf.lo, b*h), grow(buf.hi, b*h)
		buf.lrow, buf.hrow = growRows(buf.lrow, b), growRows(buf.hrow, b)
		for i := range b {
			buf.lrow[i] = buf.lo[i*h : (i+1)*h : (i+1)*h]
			buf.hrow[i] = buf.hi[i*h : (i+1)*h : (i+1)*h]
		}
		if err := predictIntervals(im, buf.hist, starts, buf.rows, buf.lrow, buf.hrow); err != nil {
			return nil, 0, err
		}
		lower, upper = buf.lrow, buf.hrow
	} else if err := models.PredictBatch(l.model, buf.hist, starts, buf.out); err != nil {
		return nil, 0, err
	}
	resp := oip.NewForecastResponse(e.name, l.version, req.ID, buf.rows, lower, upper)
	if len(want) > 0 {
		outs := resp.Outputs[:0]
		for _, o := range resp.Outputs {
			if want[o.Name] {
				outs = append(outs, o)
			}
		}
		resp.Outputs = outs
	}
	// Drop references into the buffers before pooling.
	clear(buf.rows)
	clear(buf.lrow)
	clear(buf.hrow)
	return resp, b, nil
}

// predictIntervals runs m.PredictInterval on every row of hist (B×L,
// row-major) into the rows of out, lower and upper. It stops at the first
// error, which names the row.
func predictIntervals(m models.IntervalModel, hist []float64, starts []time.Time, out, lower, upper [][]float64) error {
	lb := m.Meta().Lookback
	for i, st := range starts {
		if err := m.PredictInterval(hist[i*lb:(i+1)*lb], st, out[i], lower[i], upper[i]); err != nil {
			return &forecast.Error{Code: forecast.ErrorCode(err), Field: forecast.ErrorField(err), Message: fmt.Sprintf("row %d: %s", i, forecast.ErrorMessage(err)), Err: err}
		}
	}
	return nil
}

// wantOutputs returns the outputs req asks for, nil for all of them. Each
// must be an output of m (hasOutput), else EINVALID naming it.
func wantOutputs(model string, m models.Model, req *oip.InferenceRequest) (map[string]bool, error) {
	if req == nil || len(req.Outputs) == 0 {
		return nil, nil // ParseForecastRequest rejects a nil request
	}
	want := make(map[string]bool, len(req.Outputs))
	for _, o := range req.Outputs {
		if !hasOutput(m, o.Name) {
			have := []string{oip.OutputForecast}
			if _, ok := m.(models.IntervalModel); ok {
				have = append(have, oip.OutputLower, oip.OutputUpper)
			}
			return nil, forecast.FieldErrorf(forecast.EINVALID, "outputs", "model %q has no output %q (it has %s)", model, o.Name, strings.Join(have, ", "))
		}
		want[o.Name] = true
	}
	return want, nil
}

// maxPooledValues bounds the float64s of one pooled scratch matrix (256
// KiB). A request larger than that (B×L above 32,768: B > 195 at L = 168)
// allocates its own and leaves it to the collector, so that a burst of
// large requests does not pin their buffers in the pool, and the memory is
// returned to the OS once they are done.
const maxPooledValues = 32 << 10

func (s *Server) putScratch(b *buffers) {
	if max(cap(b.hist), cap(b.out), cap(b.lo), cap(b.hi)) > maxPooledValues {
		return
	}
	s.scratch.Put(b)
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func growRows(s [][]float64, n int) [][]float64 {
	if cap(s) < n {
		return make([][]float64, n)
	}
	return s[:n]
}
