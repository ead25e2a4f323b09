package oipgrpc

import (
	"math"
	"strconv"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	pb "github.com/carbongate/carbongate/oip/grpc/inferencepb"
)

// ParamBinaryDataOutput is the request parameter (bool) that asks the server
// for raw_output_contents even when the inputs came as contents. It reuses
// the name of the REST binary tensor extension.
const ParamBinaryDataOutput = "binary_data_output"

// toParams converts parameters to the proto map. InferParameter carries
// bool, int64 and string only: int and int32 become int64, a float64 that
// is an integer in int64 range becomes int64 (JSON numbers arrive as
// float64), any other float64 is sent as its shortest decimal string.
// Other value types are EINVALID.
func toParams(field string, p oip.Parameters) (map[string]*pb.InferParameter, error) {
	if len(p) == 0 {
		return nil, nil
	}
	out := make(map[string]*pb.InferParameter, len(p))
	for k, v := range p {
		var ip pb.InferParameter
		switch x := v.(type) {
		case bool:
			ip.ParameterChoice = &pb.InferParameter_BoolParam{BoolParam: x}
		case string:
			ip.ParameterChoice = &pb.InferParameter_StringParam{StringParam: x}
		case int64:
			ip.ParameterChoice = &pb.InferParameter_Int64Param{Int64Param: x}
		case int:
			ip.ParameterChoice = &pb.InferParameter_Int64Param{Int64Param: int64(x)}
		case int32:
			ip.ParameterChoice = &pb.InferParameter_Int64Param{Int64Param: int64(x)}
		case float64:
			if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
				ip.ParameterChoice = &pb.InferParameter_Int64Param{Int64Param: int64(x)}
			} else {
				ip.ParameterChoice = &pb.InferParameter_StringParam{StringParam: strconv.FormatFloat(x, 'g', -1, 64)}
			}
		default:
			return nil, forecast.FieldErrorf(forecast.EINVALID, field, "parameter %q has type %T; gRPC carries bool, int64, float64 and string", k, v)
		}
		out[k] = &ip
	}
	return out, nil
}

// fromParams converts the proto map; parameters of a kind this proto does
// not know (unset oneof) are dropped.
func fromParams(m map[string]*pb.InferParameter) oip.Parameters {
	if len(m) == 0 {
		return nil
	}
	out := make(oip.Parameters, len(m))
	for k, v := range m {
		switch x := v.GetParameterChoice().(type) {
		case *pb.InferParameter_BoolParam:
			out[k] = x.BoolParam
		case *pb.InferParameter_Int64Param:
			out[k] = x.Int64Param
		case *pb.InferParameter_StringParam:
			out[k] = x.StringParam
		}
	}
	return out
}

// fixedWidth reports whether d has a fixed element size in raw contents.
func fixedWidth(d oip.Datatype) bool { return d.Valid() && d != oip.BYTES }

// toContents puts t's data into InferTensorContents. t must be valid
// (oip.Tensor.Validate): narrow unsigned values are then in uint32 range.
// Slices are shared, not copied.
func toContents(t *oip.Tensor) *pb.InferTensorContents {
	c := &pb.InferTensorContents{}
	switch t.Datatype {
	case oip.BOOL:
		c.BoolContents = t.BOOL
	case oip.INT8, oip.INT16, oip.INT32:
		c.IntContents = t.INT32
	case oip.INT64:
		c.Int64Contents = t.INT64
	case oip.UINT8, oip.UINT16, oip.UINT32:
		u := make([]uint32, len(t.UINT64))
		for i, v := range t.UINT64 {
			u[i] = uint32(v)
		}
		c.UintContents = u
	case oip.UINT64:
		c.Uint64Contents = t.UINT64
	case oip.FP32:
		c.Fp32Contents = t.FP32
	case oip.FP64:
		c.Fp64Contents = t.FP64
	case oip.BYTES:
		c.BytesContents = t.BYTES
	}
	return c
}

// wire is a tensor as the proto carries it, before decoding.
type wire struct {
	name     string
	datatype string
	shape    []int64
	params   map[string]*pb.InferParameter
	contents *pb.InferTensorContents
	raw      []byte
	hasRaw   bool
}

// decode turns a wire tensor into an oip.Tensor, checking everything: a
// supported datatype, a non-negative shape, data in exactly one form (raw
// or the contents field of the datatype) holding exactly the shape's
// element count, and values in range. Errors are EINVALID naming the
// tensor. Nothing is allocated from the declared shape alone, so a hostile
// shape cannot cause a large allocation. Decoded slices may share memory
// with the message.
func (w *wire) decode() (oip.Tensor, error) {
	t := oip.Tensor{Name: w.name, Datatype: oip.Datatype(w.datatype), Shape: w.shape, Parameters: fromParams(w.params)}
	if w.name == "" {
		return t, forecast.FieldErrorf(forecast.EINVALID, "name", "tensor has no name")
	}
	if !t.Datatype.Valid() {
		return t, forecast.FieldErrorf(forecast.EINVALID, w.name, "tensor %q: unsupported datatype %q", w.name, w.datatype)
	}
	n, err := oip.NumElements(w.shape)
	if err != nil {
		return t, forecast.FieldErrorf(forecast.EINVALID, w.name, "tensor %q: %s", w.name, forecast.ErrorMessage(err))
	}
	if w.hasRaw {
		if contentsLen(w.contents) != 0 {
			return t, forecast.FieldErrorf(forecast.EINVALID, w.name, "tensor %q has both raw contents and contents", w.name)
		}
		if err := oip.DecodeRaw(&t, w.raw, n, "raw contents"); err != nil {
			return t, err
		}
	} else if err := decodeContents(&t, n, w.contents); err != nil {
		return t, err
	}
	if err := t.Validate(); err != nil {
		return t, err
	}
	return t, nil
}

func contentsLen(c *pb.InferTensorContents) int {
	if c == nil {
		return 0
	}
	return len(c.BoolContents) + len(c.IntContents) + len(c.Int64Contents) + len(c.UintContents) +
		len(c.Uint64Contents) + len(c.Fp32Contents) + len(c.Fp64Contents) + len(c.BytesContents)
}

func decodeContents(t *oip.Tensor, n int, c *pb.InferTensorContents) error {
	var got int // elements in the field of t's datatype
	switch t.Datatype {
	case oip.BOOL:
		t.BOOL, got = c.GetBoolContents(), len(c.GetBoolContents())
	case oip.INT8, oip.INT16, oip.INT32:
		t.INT32, got = c.GetIntContents(), len(c.GetIntContents())
	case oip.INT64:
		t.INT64, got = c.GetInt64Contents(), len(c.GetInt64Contents())
	case oip.UINT8, oip.UINT16, oip.UINT32:
		got = len(c.GetUintContents())
		if got == n {
			t.UINT64 = make([]uint64, got)
			for i, v := range c.GetUintContents() {
				t.UINT64[i] = uint64(v)
			}
		}
	case oip.UINT64:
		t.UINT64, got = c.GetUint64Contents(), len(c.GetUint64Contents())
	case oip.FP32:
		t.FP32, got = c.GetFp32Contents(), len(c.GetFp32Contents())
	case oip.FP64:
		t.FP64, got = c.GetFp64Contents(), len(c.GetFp64Contents())
	case oip.BYTES:
		t.BYTES, got = c.GetBytesContents(), len(c.GetBytesContents())
	}
	if got != n {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: shape %v holds %d elements, contents of %s have %d", t.Name, t.Shape, n, t.Datatype, got)
	}
	if other := contentsLen(c) - got; other != 0 {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: %d values in contents fields other than the one of %s", t.Name, other, t.Datatype)
	}
	return nil
}

// encodeTensors converts tensors to their proto form, raw or as contents.
// Tensors must be valid.
func encodeTensors[T any](field string, ts []oip.Tensor, raw bool, mk func(name, datatype string, shape []int64, params map[string]*pb.InferParameter, c *pb.InferTensorContents) T) ([]T, [][]byte, error) {
	out := make([]T, len(ts))
	var raws [][]byte
	if raw {
		raws = make([][]byte, len(ts))
	}
	for i := range ts {
		t := &ts[i]
		params, err := toParams(field, t.Parameters)
		if err != nil {
			return nil, nil, err
		}
		var c *pb.InferTensorContents
		if raw {
			raws[i] = oip.AppendRaw(nil, t)
		} else {
			c = toContents(t)
		}
		out[i] = mk(t.Name, string(t.Datatype), t.Shape, params, c)
	}
	return out, raws, nil
}

// decodeTensors decodes a list of wire tensors; raws is nil or holds one
// entry per tensor.
func decodeTensors(kind string, ws []wire, raws [][]byte) ([]oip.Tensor, error) {
	if len(raws) != 0 && len(raws) != len(ws) {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "raw_"+kind+"_contents", "%d raw contents for %d %ss", len(raws), len(ws), kind)
	}
	ts := make([]oip.Tensor, len(ws))
	for i := range ws {
		if len(raws) != 0 {
			ws[i].raw, ws[i].hasRaw = raws[i], true
		}
		t, err := ws[i].decode()
		if err != nil {
			return nil, err
		}
		ts[i] = t
	}
	return ts, nil
}

// wireHeaders returns the names, datatypes and shapes of ws, without data,
// for oip.Limits.Check.
func wireHeaders(ws []wire) []oip.Tensor {
	ts := make([]oip.Tensor, len(ws))
	for i, w := range ws {
		ts[i] = oip.Tensor{Name: w.name, Datatype: oip.Datatype(w.datatype), Shape: w.shape}
	}
	return ts
}

func inputWires(in []*pb.ModelInferRequest_InferInputTensor) []wire {
	ws := make([]wire, len(in))
	for i, t := range in {
		ws[i] = wire{name: t.GetName(), datatype: t.GetDatatype(), shape: t.GetShape(), params: t.GetParameters(), contents: t.GetContents()}
	}
	return ws
}

func outputWires(out []*pb.ModelInferResponse_InferOutputTensor) []wire {
	ws := make([]wire, len(out))
	for i, t := range out {
		ws[i] = wire{name: t.GetName(), datatype: t.GetDatatype(), shape: t.GetShape(), params: t.GetParameters(), contents: t.GetContents()}
	}
	return ws
}

func mkInput(name, datatype string, shape []int64, params map[string]*pb.InferParameter, c *pb.InferTensorContents) *pb.ModelInferRequest_InferInputTensor {
	return &pb.ModelInferRequest_InferInputTensor{Name: name, Datatype: datatype, Shape: shape, Parameters: params, Contents: c}
}

func mkOutput(name, datatype string, shape []int64, params map[string]*pb.InferParameter, c *pb.InferTensorContents) *pb.ModelInferResponse_InferOutputTensor {
	return &pb.ModelInferResponse_InferOutputTensor{Name: name, Datatype: datatype, Shape: shape, Parameters: params, Contents: c}
}

func tensorMetaToPB(ts []oip.TensorMetadata) []*pb.ModelMetadataResponse_TensorMetadata {
	out := make([]*pb.ModelMetadataResponse_TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = &pb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: string(t.Datatype), Shape: t.Shape}
	}
	return out
}

func tensorMetaFromPB(ts []*pb.ModelMetadataResponse_TensorMetadata) []oip.TensorMetadata {
	if len(ts) == 0 {
		return nil
	}
	out := make([]oip.TensorMetadata, len(ts))
	for i, t := range ts {
		out[i] = oip.TensorMetadata{Name: t.GetName(), Datatype: oip.Datatype(t.GetDatatype()), Shape: t.GetShape()}
	}
	return out
}
