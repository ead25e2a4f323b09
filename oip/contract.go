package oip

import (
	"math"
	"strconv"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// The tensor names of the forecaster contract (docs/ARCHITECTURE.md):
// inputs history FP32 [B, L] (hourly values, oldest first, ending the hour
// before start) and start_unix INT64 [B, 1] (Unix seconds of the first
// forecast hour, UTC, hour-aligned); outputs forecast FP32 [B, H] and
// optional lower/upper FP32 [B, H] (prediction interval).
const (
	InputHistory   = "history"
	InputStart     = "start_unix"
	OutputForecast = "forecast"
	OutputLower    = "lower"
	OutputUpper    = "upper"
)

// Contract is a forecaster's tensor contract: Lookback (L) hours of history
// in, Horizon (H) hours of forecast out. A zero field means "not known":
// the parsers then accept any positive size for that dimension.
type Contract struct {
	Lookback, Horizon int
}

// ContractOf reads the contract from a model's metadata. It requires input
// history FP32 [-1|B, L], input start_unix INT64 [-1|B, 1] and output
// forecast FP32 [-1|B, H] with L, H > 0; outputs lower and upper are
// optional and must match forecast's declaration. Other inputs make the
// model unusable (the contract cannot fill them); other outputs are
// ignored. Errors are EINVALID and say what is wrong.
func ContractOf(md ModelMetadata) (Contract, error) {
	hist, ok := md.Input(InputHistory)
	if !ok {
		return Contract{}, metaErr(md, InputHistory, "declares no input %q", InputHistory)
	}
	if hist.Datatype != FP32 || len(hist.Shape) != 2 || !batchDim(hist.Shape[0]) || hist.Shape[1] <= 0 {
		return Contract{}, metaErr(md, InputHistory, "input %q is %s %v, want FP32 [-1|B, L] with L > 0", InputHistory, hist.Datatype, hist.Shape)
	}
	start, ok := md.Input(InputStart)
	if !ok {
		return Contract{}, metaErr(md, InputStart, "declares no input %q", InputStart)
	}
	if start.Datatype != INT64 || len(start.Shape) != 2 || !batchDim(start.Shape[0]) || start.Shape[1] != 1 {
		return Contract{}, metaErr(md, InputStart, "input %q is %s %v, want INT64 [-1|B, 1]", InputStart, start.Datatype, start.Shape)
	}
	for _, in := range md.Inputs {
		if in.Name != InputHistory && in.Name != InputStart {
			return Contract{}, metaErr(md, in.Name, "declares input %q outside the forecaster contract", in.Name)
		}
	}
	fc, ok := md.Output(OutputForecast)
	if !ok {
		return Contract{}, metaErr(md, OutputForecast, "declares no output %q", OutputForecast)
	}
	if fc.Datatype != FP32 || len(fc.Shape) != 2 || !batchDim(fc.Shape[0]) || fc.Shape[1] <= 0 {
		return Contract{}, metaErr(md, OutputForecast, "output %q is %s %v, want FP32 [-1|B, H] with H > 0", OutputForecast, fc.Datatype, fc.Shape)
	}
	for _, name := range []string{OutputLower, OutputUpper} {
		o, ok := md.Output(name)
		if !ok {
			continue
		}
		if o.Datatype != FP32 || len(o.Shape) != 2 || o.Shape[0] != fc.Shape[0] || o.Shape[1] != fc.Shape[1] {
			return Contract{}, metaErr(md, name, "output %q is %s %v, want FP32 %v like %q", name, o.Datatype, o.Shape, fc.Shape, OutputForecast)
		}
	}
	b := []int64{hist.Shape[0], start.Shape[0], fc.Shape[0]}
	for _, x := range b[1:] {
		if x != -1 && b[0] != -1 && x != b[0] {
			return Contract{}, metaErr(md, "shape", "batch dimensions disagree: history %d, start_unix %d, forecast %d", b[0], b[1], b[2])
		}
	}
	return Contract{Lookback: int(hist.Shape[1]), Horizon: int(fc.Shape[1])}, nil
}

func batchDim(d int64) bool { return d == -1 || d > 0 }

func metaErr(md ModelMetadata, field, format string, args ...any) error {
	e := forecast.FieldErrorf(forecast.EINVALID, field, format, args...)
	e.Message = "model " + strconv.Quote(md.Name) + " does not honour the forecaster contract: " + e.Message
	return e
}

// Metadata returns the metadata a server declares for a model honouring c:
// batch dimension -1, inputs history and start_unix, outputs forecast, lower
// and upper.
func (c Contract) Metadata(name string, versions []string, platform string) ModelMetadata {
	l, h := int64(c.Lookback), int64(c.Horizon)
	return ModelMetadata{
		Name:     name,
		Versions: versions,
		Platform: platform,
		Inputs: []TensorMetadata{
			{Name: InputHistory, Datatype: FP32, Shape: []int64{-1, l}},
			{Name: InputStart, Datatype: INT64, Shape: []int64{-1, 1}},
		},
		Outputs: []TensorMetadata{
			{Name: OutputForecast, Datatype: FP32, Shape: []int64{-1, h}},
			{Name: OutputLower, Datatype: FP32, Shape: []int64{-1, h}},
			{Name: OutputUpper, Datatype: FP32, Shape: []int64{-1, h}},
		},
	}
}

// NewForecastRequest builds the infer request of a batch: B = len(histories)
// rows of equal length L > 0, finite and within FP32 range, and one start
// per row, hour-aligned (any location; sent as Unix seconds). It requests
// no particular outputs, so the server returns all of them. Errors are
// EINVALID.
func NewForecastRequest(id string, histories [][]float64, starts []time.Time) (*InferenceRequest, error) {
	b := len(histories)
	if b == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "no histories")
	}
	if len(starts) != b {
		return nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "%d starts for %d histories", len(starts), b)
	}
	l := len(histories[0])
	if l == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "empty history")
	}
	hist := make([]float32, 0, b*l)
	for i, h := range histories {
		if len(h) != l {
			return nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "history %d has %d values, history 0 has %d", i, len(h), l)
		}
		for j, v := range h {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
				return nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "history %d value %d is %v, want a finite FP32", i, j, v)
			}
			hist = append(hist, float32(v))
		}
	}
	st := make([]int64, b)
	for i, t := range starts {
		u := t.Unix()
		if u%3600 != 0 || t.Nanosecond() != 0 {
			return nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "start %d (%s) is not hour-aligned", i, t.UTC().Format(time.RFC3339Nano))
		}
		st[i] = u
	}
	return &InferenceRequest{
		ID: id,
		Inputs: []Tensor{
			{Name: InputHistory, Datatype: FP32, Shape: []int64{int64(b), int64(l)}, FP32: hist},
			{Name: InputStart, Datatype: INT64, Shape: []int64{int64(b), 1}, INT64: st},
		},
	}, nil
}

// ParseForecastRequest is the server side of NewForecastRequest: it checks
// req against c (exactly the inputs history FP32 [B, L] and start_unix
// INT64 [B, 1] with the same B > 0, L = c.Lookback unless that is zero,
// finite history values, hour-aligned starts) and returns the B histories
// (rows of one backing array) and starts in UTC. Errors are EINVALID and
// name the offending input.
func ParseForecastRequest(req *InferenceRequest, c Contract) (histories [][]float64, starts []time.Time, err error) {
	if req == nil {
		return nil, nil, forecast.Errorf(forecast.EINVALID, "no request")
	}
	for i := range req.Inputs {
		if n := req.Inputs[i].Name; n != InputHistory && n != InputStart {
			return nil, nil, forecast.FieldErrorf(forecast.EINVALID, n, "unexpected input %q: the forecaster takes %q and %q", n, InputHistory, InputStart)
		}
		if err := req.Inputs[i].Validate(); err != nil {
			return nil, nil, err
		}
	}
	h := req.Input(InputHistory)
	if h == nil {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "missing input %q", InputHistory)
	}
	s := req.Input(InputStart)
	if s == nil {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "missing input %q", InputStart)
	}
	if h.Datatype != FP32 {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "input %q has datatype %s, want FP32", InputHistory, h.Datatype)
	}
	if len(h.Shape) != 2 || h.Shape[0] <= 0 || h.Shape[1] <= 0 {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "input %q has shape %v, want [B, L] with B, L > 0", InputHistory, h.Shape)
	}
	if c.Lookback > 0 && h.Shape[1] != int64(c.Lookback) {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "input %q has %d hours per row, model wants %d", InputHistory, h.Shape[1], c.Lookback)
	}
	if s.Datatype != INT64 {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "input %q has datatype %s, want INT64", InputStart, s.Datatype)
	}
	if len(s.Shape) != 2 || s.Shape[1] != 1 {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "input %q has shape %v, want [B, 1]", InputStart, s.Shape)
	}
	if s.Shape[0] != h.Shape[0] {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "input %q has batch %d, %q has %d", InputStart, s.Shape[0], InputHistory, h.Shape[0])
	}
	b, l := int(h.Shape[0]), int(h.Shape[1])
	flat := make([]float64, b*l)
	for i, v := range h.FP32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputHistory, "input %q row %d value %d is not finite", InputHistory, i/l, i%l)
		}
		flat[i] = float64(v)
	}
	histories = make([][]float64, b)
	for i := range histories {
		histories[i] = flat[i*l : (i+1)*l : (i+1)*l]
	}
	starts = make([]time.Time, b)
	for i, u := range s.INT64 {
		if u%3600 != 0 {
			return nil, nil, forecast.FieldErrorf(forecast.EINVALID, InputStart, "input %q row %d (%d) is not hour-aligned", InputStart, i, u)
		}
		starts[i] = time.Unix(u, 0).UTC()
	}
	return histories, starts, nil
}

// NewForecastResponse builds the infer response of a batch: forecast FP32
// [B, H] with B = len(forecasts) and H = len(forecasts[0]); lower and upper
// are added when non-nil. Rows must all have H values: ragged rows give a
// tensor whose data does not fit its shape, which Validate (and so every
// server of this module) rejects rather than sends.
func NewForecastResponse(model, version, id string, forecasts [][]float64, lower, upper [][]float64) *InferenceResponse {
	resp := &InferenceResponse{ModelName: model, ModelVersion: version, ID: id}
	h := 0
	if len(forecasts) > 0 {
		h = len(forecasts[0])
	}
	resp.Outputs = append(resp.Outputs, fp32Matrix(OutputForecast, forecasts, h))
	if lower != nil {
		resp.Outputs = append(resp.Outputs, fp32Matrix(OutputLower, lower, h))
	}
	if upper != nil {
		resp.Outputs = append(resp.Outputs, fp32Matrix(OutputUpper, upper, h))
	}
	return resp
}

func fp32Matrix(name string, rows [][]float64, h int) Tensor {
	n := 0
	for _, r := range rows {
		n += len(r)
	}
	data := make([]float32, 0, n)
	for _, r := range rows {
		for _, v := range r {
			data = append(data, float32(v))
		}
	}
	return Tensor{Name: name, Datatype: FP32, Shape: []int64{int64(len(rows)), int64(h)}, FP32: data}
}

// ParseForecastResponse is the client side of NewForecastResponse: it
// checks resp for a batch of b against c (forecast FP32 [b, H] with H =
// c.Horizon unless that is zero; lower and upper, when present, FP32 of the
// same shape; every value finite) and returns the rows. lower and upper are
// nil when the model does not return them. Errors are EINVALID: the model
// answered something the contract does not allow.
func ParseForecastResponse(resp *InferenceResponse, b int, c Contract) (fc, lower, upper [][]float64, err error) {
	if resp == nil {
		return nil, nil, nil, forecast.Errorf(forecast.EINVALID, "no response")
	}
	f := resp.Output(OutputForecast)
	if f == nil {
		return nil, nil, nil, forecast.FieldErrorf(forecast.EINVALID, OutputForecast, "response has no output %q", OutputForecast)
	}
	if len(f.Shape) != 2 || f.Shape[0] != int64(b) || f.Shape[1] <= 0 || (c.Horizon > 0 && f.Shape[1] != int64(c.Horizon)) {
		want := "H"
		if c.Horizon > 0 {
			want = strconv.Itoa(c.Horizon)
		}
		return nil, nil, nil, forecast.FieldErrorf(forecast.EINVALID, OutputForecast, "output %q has shape %v, want [%d, %s]", OutputForecast, f.Shape, b, want)
	}
	shape := f.Shape
	if fc, err = fp32Rows(f, shape); err != nil {
		return nil, nil, nil, err
	}
	if t := resp.Output(OutputLower); t != nil {
		if lower, err = fp32Rows(t, shape); err != nil {
			return nil, nil, nil, err
		}
	}
	if t := resp.Output(OutputUpper); t != nil {
		if upper, err = fp32Rows(t, shape); err != nil {
			return nil, nil, nil, err
		}
	}
	return fc, lower, upper, nil
}

func fp32Rows(t *Tensor, shape []int64) ([][]float64, error) {
	if t.Datatype != FP32 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, t.Name, "output %q has datatype %s, want FP32", t.Name, t.Datatype)
	}
	if !ShapeMatches(shape, t.Shape) {
		return nil, forecast.FieldErrorf(forecast.EINVALID, t.Name, "output %q has shape %v, want %v", t.Name, t.Shape, shape)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	b, h := int(shape[0]), int(shape[1])
	flat := make([]float64, b*h)
	for i, v := range t.FP32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, forecast.FieldErrorf(forecast.EINVALID, t.Name, "output %q row %d value %d is not finite", t.Name, i/h, i%h)
		}
		flat[i] = float64(v)
	}
	rows := make([][]float64, b)
	for i := range rows {
		rows[i] = flat[i*h : (i+1)*h : (i+1)*h]
	}
	return rows, nil
}
