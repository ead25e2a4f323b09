package rest

// Inference requests and responses, errors and metadata on the wire.

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// encodeRequest renders req. Inputs for which binIn reports true go in
// binary after the JSON; the result's second value is the JSON length
// (-1 when the body is plain JSON).
func encodeRequest(buf []byte, req *oip.InferenceRequest, binIn func(*oip.Tensor) bool, binOut bool) ([]byte, int, error) {
	var tail []byte
	buf = append(buf, '{')
	if req.ID != "" {
		buf = append(buf, `"id":`...)
		buf = appendString(buf, req.ID)
		buf = append(buf, ',')
	}
	params := req.Parameters
	if binOut {
		if v, ok := paramBool(params, ParamBinaryOutput); !ok || !v {
			q := make(oip.Parameters, len(params)+1)
			for k, v := range params {
				q[k] = v
			}
			q[ParamBinaryOutput] = true
			params = q
		}
	}
	if len(params) > 0 {
		b, err := json.Marshal(map[string]any(params))
		if err != nil {
			return buf, 0, invalidf("parameters: %v", err)
		}
		buf = append(append(buf, `"parameters":`...), b...)
		buf = append(buf, ',')
	}
	buf = append(buf, `"inputs":[`...)
	var err error
	for i := range req.Inputs {
		if i > 0 {
			buf = append(buf, ',')
		}
		t := &req.Inputs[i]
		if buf, err = appendTensor(buf, t, binIn != nil && binIn(t), &tail); err != nil {
			return buf, 0, err
		}
	}
	buf = append(buf, ']')
	if len(req.Outputs) > 0 {
		buf = append(buf, `,"outputs":[`...)
		for i, o := range req.Outputs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"name":`...)
			buf = appendString(buf, o.Name)
			if buf, err = appendParams(buf, o.Parameters, -1); err != nil {
				return buf, 0, err
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	buf = append(buf, '}')
	if tail == nil {
		return buf, -1, nil
	}
	n := len(buf)
	return append(buf, tail...), n, nil
}

// decodeRequest parses a request body; headerLen is the value of the
// Inference-Header-Content-Length header ("" if absent). check, when not
// nil, judges the inputs' names, datatypes and shapes before any tensor
// data is decoded (see oip.Limits.Check). Errors are EINVALID.
func decodeRequest(body []byte, headerLen string, check func([]oip.Tensor) error) (*oip.InferenceRequest, error) {
	js, tail, hasTail, err := splitBody(body, headerLen)
	if err != nil {
		return nil, err
	}
	var w wireRequest
	if err := json.Unmarshal(js, &w); err != nil {
		return nil, jsonError("request", err)
	}
	req := &oip.InferenceRequest{ID: w.ID}
	if req.Parameters, err = decodeParams(w.Parameters); err != nil {
		return nil, err
	}
	if len(w.Inputs) == 0 {
		return nil, invalidf("request has no inputs")
	}
	if req.Inputs, err = decodeTensors(w.Inputs, "input", &tail, hasTail, check); err != nil {
		return nil, err
	}
	if len(tail) != 0 {
		return nil, invalidf("%d binary bytes after the last binary input", len(tail))
	}
	for _, o := range w.Outputs {
		p, err := decodeParams(o.Parameters)
		if err != nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, o.Name, "output %q: %s", o.Name, forecast.ErrorMessage(err))
		}
		req.Outputs = append(req.Outputs, oip.RequestedOutput{Name: o.Name, Parameters: p})
	}
	return req, nil
}

// encodeResponse renders resp; binOut says which outputs go in binary.
// The second result is the JSON length, -1 for a plain JSON body.
func encodeResponse(buf []byte, resp *oip.InferenceResponse, binOut func(name string) bool) ([]byte, int, error) {
	var tail []byte
	buf = append(buf, `{"model_name":`...)
	buf = appendString(buf, resp.ModelName)
	if resp.ModelVersion != "" {
		buf = append(buf, `,"model_version":`...)
		buf = appendString(buf, resp.ModelVersion)
	}
	if resp.ID != "" {
		buf = append(buf, `,"id":`...)
		buf = appendString(buf, resp.ID)
	}
	var err error
	if buf, err = appendParams(buf, resp.Parameters, -1); err != nil {
		return buf, 0, err
	}
	buf = append(buf, `,"outputs":[`...)
	for i := range resp.Outputs {
		if i > 0 {
			buf = append(buf, ',')
		}
		t := &resp.Outputs[i]
		if buf, err = appendTensor(buf, t, binOut != nil && binOut(t.Name), &tail); err != nil {
			return buf, 0, err
		}
	}
	buf = append(buf, "]}"...)
	if tail == nil {
		return buf, -1, nil
	}
	n := len(buf)
	return append(buf, tail...), n, nil
}

// decodeResponse parses a response body (JSON or with binary outputs).
func decodeResponse(body []byte, headerLen string) (*oip.InferenceResponse, error) {
	js, tail, hasTail, err := splitBody(body, headerLen)
	if err != nil {
		return nil, err
	}
	var w wireResponse
	if err := json.Unmarshal(js, &w); err != nil {
		return nil, jsonError("response", err)
	}
	resp := &oip.InferenceResponse{ModelName: w.ModelName, ModelVersion: w.ModelVersion, ID: w.ID}
	if resp.Parameters, err = decodeParams(w.Parameters); err != nil {
		return nil, err
	}
	if resp.Outputs, err = decodeTensors(w.Outputs, "output", &tail, hasTail, nil); err != nil {
		return nil, err
	}
	if len(tail) != 0 {
		return nil, invalidf("%d binary bytes after the last binary output", len(tail))
	}
	return resp, nil
}

// jsonError renders an error of encoding/json in protocol terms, as
// EINVALID: the position of a syntax error, or the JSON field (its path in
// the document, as "inputs.shape") and the JSON kinds of a type mismatch.
// encoding/json's own text names Go types and struct fields
// ("cannot unmarshal string into Go struct field wireTensor.inputs.shape of
// type int64"), which mean nothing to a client.
func jsonError(what string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return invalidf("malformed JSON %s: want %s, got %s", what, jsonKind(te.Type), te.Value)
		}
		return forecast.FieldErrorf(forecast.EINVALID, field, "malformed JSON %s: field %q must be %s, got %s", what, field, jsonKind(te.Type), te.Value)
	case errors.As(err, &se):
		return invalidf("malformed JSON %s at byte %d: %s", what, se.Offset, se.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf("malformed JSON %s: unexpected end of input", what)
	}
	return invalidf("malformed JSON %s", what)
}

// jsonKind names what JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == reflect.TypeFor[json.RawMessage]() {
		return "a JSON value"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}

func metaToWire(md oip.ModelMetadata) wireModelMeta {
	conv := func(ts []oip.TensorMetadata) []wireTensorMeta {
		out := make([]wireTensorMeta, len(ts))
		for i, t := range ts {
			shape := t.Shape
			if shape == nil {
				shape = []int64{}
			}
			out[i] = wireTensorMeta{Name: t.Name, Datatype: string(t.Datatype), Shape: shape}
		}
		return out
	}
	return wireModelMeta{Name: md.Name, Versions: md.Versions, Platform: md.Platform, Inputs: conv(md.Inputs), Outputs: conv(md.Outputs)}
}

func metaFromWire(w wireModelMeta) oip.ModelMetadata {
	conv := func(ts []wireTensorMeta) []oip.TensorMetadata {
		if len(ts) == 0 {
			return nil
		}
		out := make([]oip.TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = oip.TensorMetadata{Name: t.Name, Datatype: oip.Datatype(t.Datatype), Shape: t.Shape}
		}
		return out
	}
	return oip.ModelMetadata{Name: w.Name, Versions: w.Versions, Platform: w.Platform, Inputs: conv(w.Inputs), Outputs: conv(w.Outputs)}
}
