package oip_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

func TestNumElements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		shape []int64
		want  int
		code  string
	}{
		{name: "scalar", shape: []int64{}, want: 1},
		{name: "matrix", shape: []int64{2, 3}, want: 6},
		{name: "zero dim", shape: []int64{4, 0, 5}, want: 0},
		{name: "negative", shape: []int64{-1, 3}, code: forecast.EINVALID},
		{name: "overflow", shape: []int64{1 << 20, 1 << 20}, code: forecast.EINVALID},
		{name: "overflow after zero is still zero", shape: []int64{0, 1 << 62, 1 << 62}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := oip.NumElements(tt.shape)
			if c := forecast.ErrorCode(err); c != tt.code {
				t.Fatalf("code=%q (%v), want %q", c, err, tt.code)
			}
			if got != tt.want {
				t.Fatalf("NumElements=%d, want %d", got, tt.want)
			}
		})
	}
}

func TestTensorValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tensor oip.Tensor
		msg    string // substring of the error; "" for valid
	}{
		{name: "fp32 ok", tensor: oip.Tensor{Name: "x", Datatype: oip.FP32, Shape: []int64{2, 2}, FP32: make([]float32, 4)}},
		{name: "empty ok", tensor: oip.Tensor{Name: "x", Datatype: oip.INT64, Shape: []int64{0, 3}}},
		{name: "no name", tensor: oip.Tensor{Datatype: oip.FP32, Shape: []int64{1}, FP32: []float32{1}}, msg: "no name"},
		{name: "fp16", tensor: oip.Tensor{Name: "x", Datatype: oip.FP16, Shape: []int64{1}}, msg: "unsupported datatype"},
		{name: "count", tensor: oip.Tensor{Name: "x", Datatype: oip.FP32, Shape: []int64{2, 2}, FP32: make([]float32, 3)}, msg: "holds 4 elements, data has 3"},
		{name: "negative dim", tensor: oip.Tensor{Name: "x", Datatype: oip.FP32, Shape: []int64{-1}}, msg: "negative"},
		{name: "wrong slice", tensor: oip.Tensor{Name: "x", Datatype: oip.FP32, Shape: []int64{1}, FP32: []float32{1}, FP64: []float64{1}}, msg: "other than"},
		{name: "datatype vs slice", tensor: oip.Tensor{Name: "x", Datatype: oip.INT64, Shape: []int64{1}, FP32: []float32{1}}, msg: "data has 0"},
		{name: "int8 range", tensor: oip.Tensor{Name: "x", Datatype: oip.INT8, Shape: []int64{1}, INT32: []int32{200}}, msg: "out of range"},
		{name: "uint16 range", tensor: oip.Tensor{Name: "x", Datatype: oip.UINT16, Shape: []int64{1}, UINT64: []uint64{1 << 16}}, msg: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.tensor.Validate()
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("Validate=%v, want nil", err)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Validate=%v, want EINVALID containing %q", err, tt.msg)
			}
		})
	}
}

func TestTensorAccessors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tensor oip.Tensor
		f64    []float64
		i64    []int64
		i64Err bool
		f64Err bool
	}{
		{name: "fp32", tensor: oip.Tensor{Datatype: oip.FP32, FP32: []float32{1, 2.5}}, f64: []float64{1, 2.5}, i64Err: true},
		{name: "fp32 integral", tensor: oip.Tensor{Datatype: oip.FP32, FP32: []float32{1, -2}}, f64: []float64{1, -2}, i64: []int64{1, -2}},
		{name: "fp64 too big", tensor: oip.Tensor{Datatype: oip.FP64, FP64: []float64{1e19}}, f64: []float64{1e19}, i64Err: true},
		{name: "fp64 nan", tensor: oip.Tensor{Datatype: oip.FP64, FP64: []float64{math.NaN()}}, f64: nil, i64Err: true},
		{name: "int64", tensor: oip.Tensor{Datatype: oip.INT64, INT64: []int64{-3, 4}}, f64: []float64{-3, 4}, i64: []int64{-3, 4}},
		{name: "int16", tensor: oip.Tensor{Datatype: oip.INT16, INT32: []int32{-3}}, f64: []float64{-3}, i64: []int64{-3}},
		{name: "uint64 overflow", tensor: oip.Tensor{Datatype: oip.UINT64, UINT64: []uint64{math.MaxUint64}}, f64: []float64{math.MaxUint64}, i64Err: true},
		{name: "uint8", tensor: oip.Tensor{Datatype: oip.UINT8, UINT64: []uint64{255}}, f64: []float64{255}, i64: []int64{255}},
		{name: "bool", tensor: oip.Tensor{Datatype: oip.BOOL, BOOL: []bool{true}}, f64Err: true, i64Err: true},
		{name: "bytes", tensor: oip.Tensor{Datatype: oip.BYTES, BYTES: [][]byte{{1}}}, f64Err: true, i64Err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.tensor.Float64s()
			if (err != nil) != tt.f64Err {
				t.Fatalf("Float64s err=%v, want err %v", err, tt.f64Err)
			}
			if !tt.f64Err && tt.f64 != nil && !reflect.DeepEqual(f, tt.f64) {
				t.Fatalf("Float64s=%v, want %v", f, tt.f64)
			}
			i, err := tt.tensor.Int64s()
			if (err != nil) != tt.i64Err {
				t.Fatalf("Int64s err=%v, want err %v", err, tt.i64Err)
			}
			if err != nil && forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("Int64s code=%q, want EINVALID", forecast.ErrorCode(err))
			}
			if !tt.i64Err && !reflect.DeepEqual(i, tt.i64) {
				t.Fatalf("Int64s=%v, want %v", i, tt.i64)
			}
		})
	}
}

func contractMeta() oip.ModelMetadata {
	return oip.Contract{Lookback: 336, Horizon: 96}.Metadata("zone-de", []string{"3"}, "carbongate")
}

func TestContractOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(md *oip.ModelMetadata)
		want   oip.Contract
		msg    string
	}{
		{name: "own metadata", mutate: func(*oip.ModelMetadata) {}, want: oip.Contract{Lookback: 336, Horizon: 96}},
		{name: "fixed batch", mutate: func(md *oip.ModelMetadata) {
			md.Inputs[0].Shape[0], md.Inputs[1].Shape[0] = 1, 1
			for i := range md.Outputs {
				md.Outputs[i].Shape[0] = 1
			}
		}, want: oip.Contract{Lookback: 336, Horizon: 96}},
		{name: "no interval, extra output", mutate: func(md *oip.ModelMetadata) {
			md.Outputs = []oip.TensorMetadata{md.Outputs[0], {Name: "debug", Datatype: oip.BYTES, Shape: []int64{-1}}}
		}, want: oip.Contract{Lookback: 336, Horizon: 96}},
		{name: "no history", mutate: func(md *oip.ModelMetadata) { md.Inputs = md.Inputs[1:] }, msg: `no input "history"`},
		{name: "history fp64", mutate: func(md *oip.ModelMetadata) { md.Inputs[0].Datatype = oip.FP64 }, msg: `input "history" is FP64`},
		{name: "history 1-D", mutate: func(md *oip.ModelMetadata) { md.Inputs[0].Shape = []int64{336} }, msg: `input "history"`},
		{name: "history variable L", mutate: func(md *oip.ModelMetadata) { md.Inputs[0].Shape[1] = -1 }, msg: "L > 0"},
		{name: "no start", mutate: func(md *oip.ModelMetadata) { md.Inputs = md.Inputs[:1] }, msg: `no input "start_unix"`},
		{name: "start int32", mutate: func(md *oip.ModelMetadata) { md.Inputs[1].Datatype = oip.INT32 }, msg: `input "start_unix" is INT32`},
		{name: "start [B,2]", mutate: func(md *oip.ModelMetadata) { md.Inputs[1].Shape[1] = 2 }, msg: "[-1|B, 1]"},
		{name: "extra input", mutate: func(md *oip.ModelMetadata) {
			md.Inputs = append(md.Inputs, oip.TensorMetadata{Name: "temp", Datatype: oip.FP32, Shape: []int64{-1, 1}})
		}, msg: `input "temp" outside`},
		{name: "no forecast", mutate: func(md *oip.ModelMetadata) { md.Outputs = md.Outputs[1:] }, msg: `no output "forecast"`},
		{name: "forecast int", mutate: func(md *oip.ModelMetadata) { md.Outputs[0].Datatype = oip.INT64 }, msg: `output "forecast" is INT64`},
		{name: "lower wrong H", mutate: func(md *oip.ModelMetadata) { md.Outputs[1].Shape[1] = 24 }, msg: `output "lower"`},
		{name: "batch disagree", mutate: func(md *oip.ModelMetadata) { md.Inputs[0].Shape[0], md.Inputs[1].Shape[0] = 1, 2 }, msg: "batch dimensions disagree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			md := contractMeta()
			tt.mutate(&md)
			got, err := oip.ContractOf(md)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("ContractOf=%v", err)
				}
				if got != tt.want {
					t.Fatalf("ContractOf=%+v, want %+v", got, tt.want)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), `"zone-de"`) {
				t.Fatalf("ContractOf err=%v, want EINVALID naming the model and containing %q", err, tt.msg)
			}
		})
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestNewForecastRequest(t *testing.T) {
	t.Parallel()
	berlin := time.FixedZone("CET", 3600)
	tests := []struct {
		name   string
		hist   [][]float64
		starts []time.Time
		msg    string
	}{
		{name: "batch of 2", hist: [][]float64{{1, 2, 3}, {4, 5, 6}}, starts: []time.Time{t0, t0.Add(time.Hour)}},
		{name: "non-UTC hour is fine", hist: [][]float64{{1}}, starts: []time.Time{t0.In(berlin)}},
		{name: "empty batch", msg: "no histories"},
		{name: "starts mismatch", hist: [][]float64{{1}}, starts: nil, msg: "0 starts for 1 histories"},
		{name: "ragged", hist: [][]float64{{1, 2}, {3}}, starts: []time.Time{t0, t0}, msg: "history 1 has 1 values"},
		{name: "empty rows", hist: [][]float64{{}}, starts: []time.Time{t0}, msg: "empty history"},
		{name: "nan", hist: [][]float64{{math.NaN()}}, starts: []time.Time{t0}, msg: "finite"},
		{name: "beyond fp32", hist: [][]float64{{1e39}}, starts: []time.Time{t0}, msg: "finite FP32"},
		{name: "not aligned", hist: [][]float64{{1}}, starts: []time.Time{t0.Add(time.Minute)}, msg: "not hour-aligned"},
		{name: "half-hour zone is still unix-aligned check", hist: [][]float64{{1}}, starts: []time.Time{t0.Add(time.Nanosecond)}, msg: "not hour-aligned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := oip.NewForecastRequest("r1", tt.hist, tt.starts)
			if tt.msg != "" {
				if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err=%v, want EINVALID containing %q", err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := req.Validate(); err != nil {
				t.Fatalf("request does not validate: %v", err)
			}
			h, s, err := oip.ParseForecastRequest(req, oip.Contract{Lookback: len(tt.hist[0])})
			if err != nil {
				t.Fatalf("ParseForecastRequest: %v", err)
			}
			if !reflect.DeepEqual(h, tt.hist) {
				t.Fatalf("histories=%v, want %v", h, tt.hist)
			}
			for i := range s {
				if !s[i].Equal(tt.starts[i]) || s[i].Location() != time.UTC {
					t.Fatalf("start %d=%v, want %v in UTC", i, s[i], tt.starts[i])
				}
			}
		})
	}
}

func TestParseForecastRequest(t *testing.T) {
	t.Parallel()
	good := func() *oip.InferenceRequest {
		req, err := oip.NewForecastRequest("x", [][]float64{{1, 2, 3, 4}, {5, 6, 7, 8}}, []time.Time{t0, t0})
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	c := oip.Contract{Lookback: 4, Horizon: 2}
	tests := []struct {
		name   string
		mutate func(r *oip.InferenceRequest)
		c      oip.Contract
		msg    string
	}{
		{name: "ok", mutate: func(*oip.InferenceRequest) {}, c: c},
		{name: "unknown lookback accepts any", mutate: func(*oip.InferenceRequest) {}, c: oip.Contract{}},
		{name: "wrong lookback", mutate: func(*oip.InferenceRequest) {}, c: oip.Contract{Lookback: 5}, msg: "model wants 5"},
		{name: "missing start", mutate: func(r *oip.InferenceRequest) { r.Inputs = r.Inputs[:1] }, c: c, msg: `missing input "start_unix"`},
		{name: "missing history", mutate: func(r *oip.InferenceRequest) { r.Inputs = r.Inputs[1:] }, c: c, msg: `missing input "history"`},
		{name: "renamed", mutate: func(r *oip.InferenceRequest) { r.Inputs[0].Name = "input-0" }, c: c, msg: `unexpected input "input-0"`},
		{name: "history fp64", mutate: func(r *oip.InferenceRequest) {
			r.Inputs[0] = oip.Tensor{Name: "history", Datatype: oip.FP64, Shape: []int64{2, 4}, FP64: make([]float64, 8)}
		}, c: c, msg: "want FP32"},
		{name: "history 1-D", mutate: func(r *oip.InferenceRequest) { r.Inputs[0].Shape = []int64{8} }, c: c, msg: "want [B, L]"},
		{name: "data count", mutate: func(r *oip.InferenceRequest) { r.Inputs[0].FP32 = r.Inputs[0].FP32[:7] }, c: c, msg: "holds 8 elements"},
		{name: "start int32", mutate: func(r *oip.InferenceRequest) {
			r.Inputs[1] = oip.Tensor{Name: "start_unix", Datatype: oip.INT32, Shape: []int64{2, 1}, INT32: []int32{0, 0}}
		}, c: c, msg: "want INT64"},
		{name: "start shape", mutate: func(r *oip.InferenceRequest) { r.Inputs[1].Shape = []int64{1, 2} }, c: c, msg: "want [B, 1]"},
		{name: "batch mismatch", mutate: func(r *oip.InferenceRequest) {
			r.Inputs[1] = oip.Tensor{Name: "start_unix", Datatype: oip.INT64, Shape: []int64{1, 1}, INT64: []int64{t0.Unix()}}
		}, c: c, msg: "batch 1"},
		{name: "nan", mutate: func(r *oip.InferenceRequest) { r.Inputs[0].FP32[5] = float32(math.Inf(1)) }, c: c, msg: "row 1 value 1 is not finite"},
		{name: "unaligned", mutate: func(r *oip.InferenceRequest) { r.Inputs[1].INT64[1] += 60 }, c: c, msg: "row 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := good()
			tt.mutate(req)
			_, _, err := oip.ParseForecastRequest(req, tt.c)
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err=%v, want EINVALID containing %q", err, tt.msg)
			}
		})
	}
}

func TestParseForecastResponse(t *testing.T) {
	t.Parallel()
	fc := [][]float64{{1, 2}, {3, 4}}
	lo := [][]float64{{0, 1}, {2, 3}}
	hi := [][]float64{{2, 3}, {4, 5}}
	c := oip.Contract{Lookback: 4, Horizon: 2}
	tests := []struct {
		name   string
		resp   *oip.InferenceResponse
		b      int
		c      oip.Contract
		lo, hi bool
		msg    string
	}{
		{name: "with interval", resp: oip.NewForecastResponse("m", "1", "x", fc, lo, hi), b: 2, c: c, lo: true, hi: true},
		{name: "point only", resp: oip.NewForecastResponse("m", "1", "x", fc, nil, nil), b: 2, c: c},
		{name: "unknown horizon", resp: oip.NewForecastResponse("m", "1", "x", fc, nil, nil), b: 2, c: oip.Contract{}},
		{name: "wrong horizon", resp: oip.NewForecastResponse("m", "1", "x", fc, nil, nil), b: 2, c: oip.Contract{Horizon: 3}, msg: "want [2, 3]"},
		{name: "wrong batch", resp: oip.NewForecastResponse("m", "1", "x", fc, nil, nil), b: 1, c: c, msg: "want [1, 2]"},
		{name: "no forecast", resp: &oip.InferenceResponse{}, b: 1, c: c, msg: `no output "forecast"`},
		{name: "nil", resp: nil, b: 1, c: c, msg: "no response"},
		{name: "ragged", resp: oip.NewForecastResponse("m", "1", "x", [][]float64{{1, 2}, {3}}, nil, nil), b: 2, c: c, msg: "holds 4 elements"},
		{name: "lower shape", resp: oip.NewForecastResponse("m", "1", "x", fc, [][]float64{{1, 2}}, nil), b: 2, c: c, msg: `output "lower" has shape [1 2]`},
		{name: "nan", resp: oip.NewForecastResponse("m", "1", "x", [][]float64{{1, math.NaN()}, {3, 4}}, nil, nil), b: 2, c: c, msg: "row 0 value 1 is not finite"},
		{name: "inf upper", resp: oip.NewForecastResponse("m", "1", "x", fc, nil, [][]float64{{1, 2}, {math.Inf(-1), 4}}), b: 2, c: c, msg: `"upper" row 1`},
		{name: "fp64 forecast", resp: &oip.InferenceResponse{Outputs: []oip.Tensor{{Name: "forecast", Datatype: oip.FP64, Shape: []int64{1, 2}, FP64: []float64{1, 2}}}}, b: 1, c: c, msg: "want FP32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, l, u, err := oip.ParseForecastResponse(tt.resp, tt.b, tt.c)
			if tt.msg != "" {
				if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err=%v, want EINVALID containing %q", err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f, fc) {
				t.Fatalf("forecast=%v, want %v", f, fc)
			}
			if (l != nil) != tt.lo || (u != nil) != tt.hi {
				t.Fatalf("lower=%v upper=%v, want present %v %v", l, u, tt.lo, tt.hi)
			}
			if tt.lo && !reflect.DeepEqual(l, lo) || tt.hi && !reflect.DeepEqual(u, hi) {
				t.Fatalf("lower=%v upper=%v, want %v %v", l, u, lo, hi)
			}
		})
	}
}

func TestCheckRequestAgainstMetadata(t *testing.T) {
	t.Parallel()
	md := oip.Contract{Lookback: 3, Horizon: 2}.Metadata("m", nil, "")
	req, err := oip.NewForecastRequest("", [][]float64{{1, 2, 3}}, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := md.CheckRequest(req); err != nil {
		t.Fatalf("CheckRequest=%v", err)
	}
	req2, _ := oip.NewForecastRequest("", [][]float64{{1, 2}}, []time.Time{t0})
	if err := md.CheckRequest(req2); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("CheckRequest(L=2)=%v, want EINVALID", err)
	}
	resp := oip.NewForecastResponse("m", "", "", [][]float64{{1, 2, 3}}, nil, nil)
	if err := md.CheckResponse(resp); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("CheckResponse(H=3)=%v, want EINVALID", err)
	}
}

func ExampleContractOf() {
	md := oip.Contract{Lookback: 336, Horizon: 96}.Metadata("carbon-forecaster-de", []string{"7"}, "carbongate")
	c, err := oip.ContractOf(md)
	fmt.Println(c.Lookback, c.Horizon, err)
	md.Inputs[1].Datatype = oip.INT32
	_, err = oip.ContractOf(md)
	fmt.Println(err)
	// Output:
	// 336 96 <nil>
	// invalid start_unix: model "carbon-forecaster-de" does not honour the forecaster contract: input "start_unix" is INT32 [-1 1], want INT64 [-1|B, 1]
}
