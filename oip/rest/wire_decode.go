package rest

// Decoding bodies: the JSON part, the binary tail and each tensor's header and data.

import (
	"strconv"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// splitBody splits a body into its JSON part and binary tail, given the
// Inference-Header-Content-Length value ("" when absent).
func splitBody(body []byte, headerLen string) (js, tail []byte, hasTail bool, err error) {
	if headerLen == "" {
		return body, nil, false, nil
	}
	n, perr := strconv.ParseInt(headerLen, 10, 64)
	if perr != nil || n < 0 || n > int64(len(body)) {
		return nil, nil, false, invalidf("%s %q does not fit a body of %d bytes", HeaderInferenceLength, headerLen, len(body))
	}
	return body[:n], body[n:], true, nil
}

// header is a wire tensor whose name, datatype, shape and parameters are
// decoded and checked, its data not yet.
type header struct {
	t       oip.Tensor // no data
	n       int        // elements the shape holds
	binSize int64      // binary_data_size, when bin
	bin     bool
}

// decodeHeader decodes everything of a wire tensor but its data. Nothing is
// allocated from the declared shape.
func decodeHeader(w *wireTensor, kind string) (header, error) {
	h := header{t: oip.Tensor{Name: w.Name, Datatype: oip.Datatype(w.Datatype), Shape: w.Shape}}
	t := &h.t
	if t.Name == "" {
		return h, invalidf("%s without a name", kind)
	}
	if !t.Datatype.Valid() {
		return h, forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q: unsupported datatype %q", kind, t.Name, w.Datatype)
	}
	if t.Shape == nil {
		return h, forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q: no shape", kind, t.Name)
	}
	var err error
	if h.n, err = oip.NumElements(t.Shape); err != nil {
		return h, forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q: %s", kind, t.Name, forecast.ErrorMessage(err))
	}
	if h.binSize, h.bin = onlyBinarySize(w.Parameters); h.bin {
		return h, nil
	}
	p, err := decodeParams(w.Parameters)
	if err != nil {
		return h, forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q: %s", kind, t.Name, forecast.ErrorMessage(err))
	}
	if h.binSize, h.bin, err = paramInt(p, ParamBinarySize); err != nil {
		return h, forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q: %s", kind, t.Name, forecast.ErrorMessage(err))
	}
	t.Parameters = without(p, ParamBinarySize)
	return h, nil
}

// decodeBody decodes the data of a checked header into h.t; binary data is
// taken from the front of *tail when the tensor says binary_data_size.
// Binary sizes are checked against the shape before anything is allocated;
// JSON data allocates no more than its text holds.
func (h *header) decodeBody(w *wireTensor, kind string, tail *[]byte, hasTail bool) error {
	t := &h.t
	hasData := len(w.Data) > 0 && string(w.Data) != "null"
	switch {
	case h.bin && hasData:
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q has both data and %s", kind, t.Name, ParamBinarySize)
	case h.bin && !hasTail:
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q has %s but the body has no %s header", kind, t.Name, ParamBinarySize, HeaderInferenceLength)
	case h.bin:
		if h.binSize > int64(len(*tail)) {
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q: %s %d exceeds the %d binary bytes left", kind, t.Name, ParamBinarySize, h.binSize, len(*tail))
		}
		raw := (*tail)[:h.binSize]
		*tail = (*tail)[h.binSize:]
		return oip.DecodeRaw(t, raw, h.n, "binary data")
	case !hasData:
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "%s %q has no data", kind, t.Name)
	}
	return decodeData(t, w.Data, h.n)
}

// decodeTensors decodes wire tensors in two passes: every header first,
// then, once check (when not nil) accepted the headers, the data.
func decodeTensors(ws []wireTensor, kind string, tail *[]byte, hasTail bool, check func([]oip.Tensor) error) ([]oip.Tensor, error) {
	hs := make([]header, len(ws))
	for i := range ws {
		var err error
		if hs[i], err = decodeHeader(&ws[i], kind); err != nil {
			return nil, err
		}
	}
	ts := make([]oip.Tensor, len(ws))
	for i := range hs {
		ts[i] = hs[i].t
	}
	if check != nil {
		if err := check(ts); err != nil {
			return nil, err
		}
	}
	for i := range hs {
		if err := hs[i].decodeBody(&ws[i], kind, tail, hasTail); err != nil {
			return nil, err
		}
		ts[i] = hs[i].t
	}
	return ts, nil
}
