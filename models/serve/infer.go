package serve

import (
	"context"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/oip"
)

// buffers is the per-request scratch space, pooled.
type buffers struct {
	hist []float64   // B×L
	out  []float64   // B×H
	rows [][]float64 // rows of out
}

// Infer implements oip.Backend under the forecaster tensor contract:
// inputs history FP32 [B, L] and start_unix INT64 [B, 1] (Unix seconds,
// hour-aligned), 1 ≤ B ≤ MaxBatch; output forecast FP32 [B, H]. Requested
// outputs, if any, must be "forecast". The response echoes req.ID and names
// the model and the version that answered.
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
	if err := checkOutputs(e.name, req); err != nil {
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
	defer s.scratch.Put(buf)
	// PredictBatch takes row-major matrices: flatten the parsed rows and
	// slice the output into rows for the response.
	buf.hist = grow(buf.hist, b*lb)
	buf.out = grow(buf.out, b*h)
	buf.rows = growRows(buf.rows, b)
	for i, r := range rows {
		copy(buf.hist[i*lb:(i+1)*lb], r)
		buf.rows[i] = buf.out[i*h : (i+1)*h : (i+1)*h]
	}
	if err := models.PredictBatch(l.model, buf.hist, starts, buf.out); err != nil {
		return nil, 0, err
	}
	resp := oip.NewForecastResponse(e.name, l.version, req.ID, buf.rows, nil, nil)
	clear(buf.rows) // drop references into buf.out before pooling
	return resp, b, nil
}

// checkOutputs rejects requested outputs other than forecast: carbongate
// models give no prediction interval.
func checkOutputs(model string, req *oip.InferenceRequest) error {
	if req == nil {
		return nil // ParseForecastRequest says so
	}
	for _, o := range req.Outputs {
		if o.Name != oip.OutputForecast {
			return forecast.FieldErrorf(forecast.EINVALID, "outputs", "model %q has no output %q (it has %q)", model, o.Name, oip.OutputForecast)
		}
	}
	return nil
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
