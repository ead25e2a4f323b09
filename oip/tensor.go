package oip

import (
	"math"

	"github.com/carbongate/carbongate/forecast"
)

// Size returns the width in bytes of one element of d in the binary tensor
// encoding: 1 for BOOL, UINT8 and INT8, up to 8 for 64-bit types, 0 for
// BYTES (variable length) and for an unknown datatype.
func (d Datatype) Size() int {
	switch d {
	case BOOL, UINT8, INT8:
		return 1
	case UINT16, INT16, FP16:
		return 2
	case UINT32, INT32, FP32:
		return 4
	case UINT64, INT64, FP64:
		return 8
	}
	return 0
}

// Valid reports whether d is a datatype this library carries. FP16 is part
// of the protocol but not supported here.
func (d Datatype) Valid() bool {
	switch d {
	case BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP32, FP64, BYTES:
		return true
	}
	return false
}

// Numeric reports whether d is an integer or floating-point datatype this
// library carries.
func (d Datatype) Numeric() bool { return d.Valid() && d != BOOL && d != BYTES }

// MaxElements bounds the element count of one tensor (2^31-1); larger
// shapes are rejected as EINVALID before any allocation.
const MaxElements = math.MaxInt32

// NumElements returns the product of shape's dimensions (1 for a scalar,
// shape []). It returns EINVALID for a negative dimension (so -1 wildcards
// of metadata are not element counts) or a product above MaxElements.
func NumElements(shape []int64) (int, error) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, forecast.FieldErrorf(forecast.EINVALID, "shape", "dimension %d is negative (%d)", i, d)
		}
		if d == 0 {
			n = 0
			continue
		}
		if n > MaxElements/d {
			return 0, forecast.FieldErrorf(forecast.EINVALID, "shape", "shape %v has more than %d elements", shape, MaxElements)
		}
		n *= d
	}
	return int(n), nil
}

// Len returns the length of the data slice that Datatype selects (the
// element count actually held), or -1 for an unsupported datatype.
func (t *Tensor) Len() int {
	switch t.Datatype {
	case FP32:
		return len(t.FP32)
	case FP64:
		return len(t.FP64)
	case INT64:
		return len(t.INT64)
	case INT8, INT16, INT32:
		return len(t.INT32)
	case UINT8, UINT16, UINT32, UINT64:
		return len(t.UINT64)
	case BOOL:
		return len(t.BOOL)
	case BYTES:
		return len(t.BYTES)
	}
	return -1
}

// otherLen is the total length of the data slices Datatype does not select.
func (t *Tensor) otherLen() int {
	n := len(t.FP32) + len(t.FP64) + len(t.INT64) + len(t.INT32) + len(t.UINT64) + len(t.BOOL) + len(t.BYTES)
	if l := t.Len(); l > 0 {
		n -= l
	}
	return n
}

// Validate checks t: a non-empty name, a supported datatype, non-negative
// dimensions, data in exactly the slice the datatype selects with as many
// elements as the shape holds, and values in range for narrow integer
// types. It returns an EINVALID *forecast.Error naming the tensor.
func (t *Tensor) Validate() error {
	if t.Name == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "name", "tensor has no name")
	}
	if !t.Datatype.Valid() {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: unsupported datatype %q", t.Name, t.Datatype)
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: %s", t.Name, forecast.ErrorMessage(err))
	}
	if l := t.Len(); l != n {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: shape %v holds %d elements, data has %d", t.Name, t.Shape, n, l)
	}
	if t.otherLen() != 0 {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: data held in a slice other than the one of datatype %s", t.Name, t.Datatype)
	}
	if err := t.checkRange(); err != nil {
		return err
	}
	return nil
}

func (t *Tensor) checkRange() error {
	var lo, hi int64
	switch t.Datatype {
	case INT8:
		lo, hi = math.MinInt8, math.MaxInt8
	case INT16:
		lo, hi = math.MinInt16, math.MaxInt16
	case UINT8:
		hi = math.MaxUint8
	case UINT16:
		hi = math.MaxUint16
	case UINT32:
		hi = math.MaxUint32
	default:
		return nil
	}
	if t.Datatype == UINT8 || t.Datatype == UINT16 || t.Datatype == UINT32 {
		for i, v := range t.UINT64 {
			if v > uint64(hi) {
				return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: element %d (%d) out of range for %s", t.Name, i, v, t.Datatype)
			}
		}
		return nil
	}
	for i, v := range t.INT32 {
		if int64(v) < lo || int64(v) > hi {
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: element %d (%d) out of range for %s", t.Name, i, v, t.Datatype)
		}
	}
	return nil
}

// Float64s returns t's data converted to float64, whatever its numeric
// datatype. Integers above 2^53 lose precision. It returns EINVALID for
// BOOL, BYTES or an unsupported datatype. The result is a new slice.
func (t *Tensor) Float64s() ([]float64, error) {
	var out []float64
	switch t.Datatype {
	case FP32:
		out = make([]float64, len(t.FP32))
		for i, v := range t.FP32 {
			out[i] = float64(v)
		}
	case FP64:
		out = make([]float64, len(t.FP64))
		copy(out, t.FP64)
	case INT64:
		out = make([]float64, len(t.INT64))
		for i, v := range t.INT64 {
			out[i] = float64(v)
		}
	case INT8, INT16, INT32:
		out = make([]float64, len(t.INT32))
		for i, v := range t.INT32 {
			out[i] = float64(v)
		}
	case UINT8, UINT16, UINT32, UINT64:
		out = make([]float64, len(t.UINT64))
		for i, v := range t.UINT64 {
			out[i] = float64(v)
		}
	default:
		return nil, forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: datatype %q is not numeric", t.Name, t.Datatype)
	}
	return out, nil
}

// Int64s returns t's data converted to int64, whatever its numeric
// datatype. Floating-point values must be integral and in range, UINT64
// values at most MaxInt64; otherwise, and for BOOL, BYTES or an unsupported
// datatype, it returns EINVALID. The result is a new slice.
func (t *Tensor) Int64s() ([]int64, error) {
	var out []int64
	switch t.Datatype {
	case INT64:
		out = make([]int64, len(t.INT64))
		copy(out, t.INT64)
	case INT8, INT16, INT32:
		out = make([]int64, len(t.INT32))
		for i, v := range t.INT32 {
			out[i] = int64(v)
		}
	case UINT8, UINT16, UINT32, UINT64:
		out = make([]int64, len(t.UINT64))
		for i, v := range t.UINT64 {
			if v > math.MaxInt64 {
				return nil, forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: element %d (%d) overflows int64", t.Name, i, v)
			}
			out[i] = int64(v)
		}
	case FP32:
		out = make([]int64, len(t.FP32))
		for i, v := range t.FP32 {
			x, err := floatToInt(t.Name, i, float64(v))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
	case FP64:
		out = make([]int64, len(t.FP64))
		for i, v := range t.FP64 {
			x, err := floatToInt(t.Name, i, v)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
	default:
		return nil, forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: datatype %q is not numeric", t.Name, t.Datatype)
	}
	return out, nil
}

func floatToInt(name string, i int, v float64) (int64, error) {
	// 2^63 is exactly representable; anything >= it overflows.
	if v != math.Trunc(v) || v >= 1<<63 || v < -(1<<63) {
		return 0, forecast.FieldErrorf(forecast.EINVALID, name, "tensor %q: element %d (%v) is not an int64", name, i, v)
	}
	return int64(v), nil
}

// Input returns the input named name, or nil.
func (r *InferenceRequest) Input(name string) *Tensor {
	for i := range r.Inputs {
		if r.Inputs[i].Name == name {
			return &r.Inputs[i]
		}
	}
	return nil
}

// Validate checks every input with Tensor.Validate and rejects duplicate
// input or requested-output names, all as EINVALID.
func (r *InferenceRequest) Validate() error {
	if err := validateTensors("input", r.Inputs); err != nil {
		return err
	}
	seen := make(map[string]bool, len(r.Outputs))
	for _, o := range r.Outputs {
		if o.Name == "" {
			return forecast.FieldErrorf(forecast.EINVALID, "outputs", "requested output has no name")
		}
		if seen[o.Name] {
			return forecast.FieldErrorf(forecast.EINVALID, "outputs", "output %q requested twice", o.Name)
		}
		seen[o.Name] = true
	}
	return nil
}

// Output returns the output named name, or nil.
func (r *InferenceResponse) Output(name string) *Tensor {
	for i := range r.Outputs {
		if r.Outputs[i].Name == name {
			return &r.Outputs[i]
		}
	}
	return nil
}

// Validate checks every output with Tensor.Validate and rejects duplicate
// names, all as EINVALID.
func (r *InferenceResponse) Validate() error { return validateTensors("output", r.Outputs) }

func validateTensors(kind string, ts []Tensor) error {
	for i := range ts {
		if err := ts[i].Validate(); err != nil {
			return err
		}
		for j := 0; j < i; j++ {
			if ts[j].Name == ts[i].Name {
				return forecast.FieldErrorf(forecast.EINVALID, ts[i].Name, "%s %q appears twice", kind, ts[i].Name)
			}
		}
	}
	return nil
}

// Input returns the declared input named name.
func (md ModelMetadata) Input(name string) (TensorMetadata, bool) { return findMeta(md.Inputs, name) }

// Output returns the declared output named name.
func (md ModelMetadata) Output(name string) (TensorMetadata, bool) { return findMeta(md.Outputs, name) }

func findMeta(ts []TensorMetadata, name string) (TensorMetadata, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return TensorMetadata{}, false
}

// ShapeMatches reports whether shape fits the declared shape decl, where -1
// in decl matches any size.
func ShapeMatches(decl, shape []int64) bool {
	if len(decl) != len(shape) {
		return false
	}
	for i, d := range decl {
		if d != -1 && d != shape[i] {
			return false
		}
	}
	return true
}

// Check returns EINVALID when t does not fit the declaration m (datatype
// or shape); it does not validate t's data (see Tensor.Validate).
func (m TensorMetadata) Check(t *Tensor) error {
	if t.Datatype != m.Datatype {
		return forecast.FieldErrorf(forecast.EINVALID, m.Name, "tensor %q: datatype %s, model declares %s", m.Name, t.Datatype, m.Datatype)
	}
	if !ShapeMatches(m.Shape, t.Shape) {
		return forecast.FieldErrorf(forecast.EINVALID, m.Name, "tensor %q: shape %v does not fit declared %v", m.Name, t.Shape, m.Shape)
	}
	return nil
}

// CheckRequest returns EINVALID unless req's inputs are exactly the
// model's declared inputs with fitting datatypes and shapes.
func (md ModelMetadata) CheckRequest(req *InferenceRequest) error {
	for i := range req.Inputs {
		m, ok := md.Input(req.Inputs[i].Name)
		if !ok {
			return forecast.FieldErrorf(forecast.EINVALID, req.Inputs[i].Name, "model %q has no input %q", md.Name, req.Inputs[i].Name)
		}
		if err := m.Check(&req.Inputs[i]); err != nil {
			return err
		}
	}
	for _, m := range md.Inputs {
		if req.Input(m.Name) == nil {
			return forecast.FieldErrorf(forecast.EINVALID, m.Name, "missing input %q of model %q", m.Name, md.Name)
		}
	}
	return nil
}

// CheckResponse returns EINVALID when an output of resp that the model
// declares does not fit its declaration; undeclared outputs are ignored.
func (md ModelMetadata) CheckResponse(resp *InferenceResponse) error {
	for i := range resp.Outputs {
		if m, ok := md.Output(resp.Outputs[i].Name); ok {
			if err := m.Check(&resp.Outputs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
