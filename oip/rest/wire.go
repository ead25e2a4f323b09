package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// Names of the binary tensor data extension.
const (
	// HeaderInferenceLength is the HTTP header giving the length of the JSON
	// part of a body that carries binary tensors after it.
	HeaderInferenceLength = "Inference-Header-Content-Length"
	// ParamBinarySize is the tensor parameter giving the byte size of a
	// tensor's binary data.
	ParamBinarySize = "binary_data_size"
	// ParamBinaryData is the requested-output parameter asking for one
	// output in binary.
	ParamBinaryData = "binary_data"
	// ParamBinaryOutput is the request parameter asking for all outputs in
	// binary.
	ParamBinaryOutput = "binary_data_output"
)

// maxNesting bounds the array nesting of JSON tensor data.
const maxNesting = 32

type wireTensor struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

type wireOutput struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

type wireRequest struct {
	ID         string          `json:"id,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Inputs     []wireTensor    `json:"inputs"`
	Outputs    []wireOutput    `json:"outputs,omitempty"`
}

type wireResponse struct {
	ModelName    string          `json:"model_name"`
	ModelVersion string          `json:"model_version,omitempty"`
	ID           string          `json:"id,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	Outputs      []wireTensor    `json:"outputs"`
}

type wireTensorMeta struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

type wireModelMeta struct {
	Name     string           `json:"name"`
	Versions []string         `json:"versions,omitempty"`
	Platform string           `json:"platform"`
	Inputs   []wireTensorMeta `json:"inputs"`
	Outputs  []wireTensorMeta `json:"outputs"`
}

type wireServerMeta struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

type wireError struct {
	Error string `json:"error"`
}

func invalidf(format string, args ...any) error {
	return forecast.Errorf(forecast.EINVALID, format, args...)
}

// ---- parameters ----

// decodeParams decodes a JSON object of parameters: numbers become int64
// when integral and in range, float64 otherwise; nested values are kept as
// decoded ([]any, map[string]any).
func decodeParams(raw json.RawMessage) (oip.Parameters, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, invalidf("parameters: want a JSON object")
	}
	if len(m) == 0 {
		return nil, nil
	}
	p := make(oip.Parameters, len(m))
	for k, v := range m {
		p[k] = convertNumbers(v)
	}
	return p, nil
}

func convertNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		for i := range x {
			x[i] = convertNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = convertNumbers(x[k])
		}
	}
	return v
}

// onlyBinarySize is the fast path for the usual parameters of a binary
// tensor, exactly {"binary_data_size":N}.
func onlyBinarySize(raw json.RawMessage) (int64, bool) {
	const prefix = `{"binary_data_size":`
	if len(raw) < len(prefix)+2 || string(raw[:len(prefix)]) != prefix || raw[len(raw)-1] != '}' {
		return 0, false
	}
	digits := raw[len(prefix) : len(raw)-1]
	if len(digits) > 15 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// paramInt returns p[key] as a non-negative int64 (ok false when absent).
func paramInt(p oip.Parameters, key string) (int64, bool, error) {
	v, ok := p[key]
	if !ok {
		return 0, false, nil
	}
	switch x := v.(type) {
	case int64:
		if x >= 0 {
			return x, true, nil
		}
	case float64:
		if x >= 0 && x == math.Trunc(x) && x < 1<<53 {
			return int64(x), true, nil
		}
	}
	return 0, true, invalidf("parameter %s must be a non-negative integer", key)
}

// paramBool returns p[key] as a bool (false when absent or not a bool).
func paramBool(p oip.Parameters, key string) (val, ok bool) {
	v, ok := p[key].(bool)
	return v, ok
}

// without returns p without key, nil if nothing is left; p is not changed.
func without(p oip.Parameters, key string) oip.Parameters {
	if _, ok := p[key]; !ok {
		return p
	}
	if len(p) == 1 {
		return nil
	}
	q := make(oip.Parameters, len(p)-1)
	for k, v := range p {
		if k != key {
			q[k] = v
		}
	}
	return q
}

func appendParams(buf []byte, p oip.Parameters, binSize int) ([]byte, error) {
	if binSize < 0 {
		if len(p) == 0 {
			return buf, nil
		}
		b, err := json.Marshal(map[string]any(p))
		if err != nil {
			return buf, invalidf("parameters: %v", err)
		}
		return append(append(buf, `,"parameters":`...), b...), nil
	}
	if len(p) == 0 {
		buf = append(buf, `,"parameters":{"binary_data_size":`...)
		buf = strconv.AppendInt(buf, int64(binSize), 10)
		return append(buf, '}'), nil
	}
	q := make(map[string]any, len(p)+1)
	for k, v := range p {
		q[k] = v
	}
	q[ParamBinarySize] = binSize
	b, err := json.Marshal(q)
	if err != nil {
		return buf, invalidf("parameters: %v", err)
	}
	return append(append(buf, `,"parameters":`...), b...), nil
}

// ---- encoding ----

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+n]...)
		}
		i += n
	}
	return append(buf, '"')
}

// appendTensor appends t as a JSON tensor object. With bin true the data
// goes to *tail in binary and the object carries binary_data_size.
func appendTensor(buf []byte, t *oip.Tensor, bin bool, tail *[]byte) ([]byte, error) {
	buf = append(buf, `{"name":`...)
	buf = appendString(buf, t.Name)
	buf = append(buf, `,"datatype":`...)
	buf = appendString(buf, string(t.Datatype))
	buf = append(buf, `,"shape":[`...)
	for i, d := range t.Shape {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, d, 10)
	}
	buf = append(buf, ']')
	var err error
	if bin {
		n := len(*tail)
		*tail = oip.AppendRaw(*tail, t)
		if buf, err = appendParams(buf, t.Parameters, len(*tail)-n); err != nil {
			return buf, err
		}
		return append(buf, '}'), nil
	}
	if buf, err = appendParams(buf, t.Parameters, -1); err != nil {
		return buf, err
	}
	buf = append(buf, `,"data":`...)
	if buf, err = appendData(buf, t); err != nil {
		return buf, err
	}
	return append(buf, '}'), nil
}

// appendData appends t's data as a flat JSON array. Non-finite floats and
// BYTES that are not UTF-8 cannot be carried by JSON: EINVALID.
func appendData(buf []byte, t *oip.Tensor) ([]byte, error) {
	buf = append(buf, '[')
	switch t.Datatype {
	case oip.FP32:
		for i, v := range t.FP32 {
			if i > 0 {
				buf = append(buf, ',')
			}
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return buf, nonFinite(t, i)
			}
			buf = strconv.AppendFloat(buf, f, 'g', -1, 32)
		}
	case oip.FP64:
		for i, v := range t.FP64 {
			if i > 0 {
				buf = append(buf, ',')
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return buf, nonFinite(t, i)
			}
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		}
	case oip.INT64:
		for i, v := range t.INT64 {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, v, 10)
		}
	case oip.INT8, oip.INT16, oip.INT32:
		for i, v := range t.INT32 {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(v), 10)
		}
	case oip.UINT8, oip.UINT16, oip.UINT32, oip.UINT64:
		for i, v := range t.UINT64 {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendUint(buf, v, 10)
		}
	case oip.BOOL:
		for i, v := range t.BOOL {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendBool(buf, v)
		}
	case oip.BYTES:
		for i, v := range t.BYTES {
			if i > 0 {
				buf = append(buf, ',')
			}
			if !utf8.Valid(v) {
				return buf, forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: BYTES element %d is not UTF-8 and JSON cannot carry it; use binary data", t.Name, i)
			}
			buf = appendString(buf, string(v))
		}
	default:
		return buf, invalidf("tensor %q: unsupported datatype %q", t.Name, t.Datatype)
	}
	return append(buf, ']'), nil
}

func nonFinite(t *oip.Tensor, i int) error {
	return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: element %d is not finite and JSON cannot carry it; use binary data", t.Name, i)
}

// ---- decoding ----

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

// decodeData parses JSON tensor data, flat or nested row-major. The nesting
// must be either flat (one array) or follow the shape exactly; a scalar
// shape also accepts a bare value. The element count must equal n.
func decodeData(t *oip.Tensor, raw []byte, n int) error {
	p := dataParser{t: t, shape: t.Shape, n: n, leafDepth: -1}
	// No element takes less than one byte plus a comma: bound allocations by
	// the input rather than by a claimed shape.
	p.reserve(min(n, len(raw)/2+1))
	if err := p.parse(raw); err != nil {
		return err
	}
	if p.count != n {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: shape %v holds %d elements, data has %d", t.Name, t.Shape, n, p.count)
	}
	return nil
}

type dataParser struct {
	t         *oip.Tensor
	shape     []int64
	n         int
	count     int
	leafDepth int
}

func (p *dataParser) errf(format string, args ...any) error {
	return forecast.FieldErrorf(forecast.EINVALID, p.t.Name, "tensor %q: "+format, append([]any{p.t.Name}, args...)...)
}

func (p *dataParser) reserve(c int) {
	switch p.t.Datatype {
	case oip.FP32:
		p.t.FP32 = make([]float32, 0, c)
	case oip.FP64:
		p.t.FP64 = make([]float64, 0, c)
	case oip.INT64:
		p.t.INT64 = make([]int64, 0, c)
	case oip.INT8, oip.INT16, oip.INT32:
		p.t.INT32 = make([]int32, 0, c)
	case oip.UINT8, oip.UINT16, oip.UINT32, oip.UINT64:
		p.t.UINT64 = make([]uint64, 0, c)
	case oip.BOOL:
		p.t.BOOL = make([]bool, 0, c)
	case oip.BYTES:
		p.t.BYTES = make([][]byte, 0, c)
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *dataParser) parse(b []byte) error {
	var counts [maxNesting]int // element count of each open array
	depth := 0                 // number of open arrays
	i := 0
	expectValue := true // after '[' or ',' (or at start)
	started := false
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			break
		}
		if started && depth == 0 {
			return p.errf("trailing characters after data")
		}
		c := b[i]
		switch {
		case c == '[':
			if !expectValue {
				return p.errf("malformed data array")
			}
			if depth == maxNesting || depth >= max(len(p.shape), 1) {
				return p.errf("data nested deeper than shape %v", p.shape)
			}
			if p.leafDepth >= 0 && depth >= p.leafDepth {
				return p.errf("data nesting is irregular")
			}
			if depth > 0 {
				counts[depth-1]++
			}
			counts[depth] = 0
			depth++
			started = true
			i++
			expectValue = true
			// Empty array: handled at ']'.
		case c == ']':
			if depth == 0 {
				return p.errf("malformed data array")
			}
			d := depth - 1
			if expectValue && counts[d] > 0 {
				return p.errf("malformed data array")
			}
			if err := p.closeArray(d, counts[d]); err != nil {
				return err
			}
			depth--
			i++
			expectValue = false
		case c == ',':
			if expectValue || depth == 0 {
				return p.errf("malformed data array")
			}
			i++
			expectValue = true
		default:
			if !expectValue {
				return p.errf("malformed data array")
			}
			if p.leafDepth == -1 {
				p.leafDepth = depth
				if depth == 0 && len(p.shape) != 0 {
					return p.errf("data is a scalar, shape is %v", p.shape)
				}
			} else if depth != p.leafDepth {
				return p.errf("data nesting is irregular")
			}
			if depth > 0 {
				counts[depth-1]++
			}
			j, err := p.leaf(b, i)
			if err != nil {
				return err
			}
			i = j
			started = true
			expectValue = false
		}
	}
	if depth != 0 || !started {
		return p.errf("malformed data array")
	}
	return nil
}

// closeArray checks an array at depth d (0 = outermost) holding c elements.
func (p *dataParser) closeArray(d, c int) error {
	switch {
	case p.leafDepth == -1:
		// No element seen yet: only an all-empty tensor may have empty arrays.
		if p.n != 0 {
			return p.errf("empty data array, shape %v holds %d elements", p.shape, p.n)
		}
	case p.leafDepth == 1:
		// Flat data: the count is checked at the end.
	case p.leafDepth == len(p.shape):
		if int64(c) != p.shape[d] {
			return p.errf("nested data has %d elements at depth %d, shape %v wants %d", c, d, p.shape, p.shape[d])
		}
	default:
		return p.errf("data nesting depth %d fits neither flat nor shape %v", p.leafDepth, p.shape)
	}
	return nil
}

// leaf parses one element starting at b[i] and returns the index after it.
func (p *dataParser) leaf(b []byte, i int) (int, error) {
	if p.count >= p.n {
		return 0, p.errf("data has more elements than shape %v holds", p.shape)
	}
	p.count++
	if p.t.Datatype == oip.BYTES {
		if b[i] != '"' {
			return 0, p.errf("BYTES elements must be JSON strings")
		}
		j := i + 1
		esc := false
		for ; j < len(b); j++ {
			if b[j] == '\\' {
				esc = true
				j++
				continue
			}
			if b[j] == '"' {
				break
			}
		}
		if j >= len(b) {
			return 0, p.errf("unterminated string")
		}
		j++
		var v []byte
		if esc || !utf8.Valid(b[i+1:j-1]) {
			var s string
			if err := json.Unmarshal(b[i:j], &s); err != nil {
				return 0, p.errf("malformed string")
			}
			v = []byte(s)
		} else {
			v = bytes.Clone(b[i+1 : j-1])
			if v == nil {
				v = []byte{}
			}
		}
		p.t.BYTES = append(p.t.BYTES, v)
		return j, nil
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != ']' && !isSpace(b[j]) {
		j++
	}
	tok := b[i:j]
	// The string does not escape: strconv copies it into any error it keeps.
	s := unsafe.String(unsafe.SliceData(tok), len(tok))
	switch p.t.Datatype {
	case oip.FP32:
		if !isNumber(tok) {
			return 0, p.errf("element %d (%.20q) is not a number", p.count-1, s)
		}
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return 0, p.errf("element %d (%.20q) does not fit FP32", p.count-1, s)
		}
		p.t.FP32 = append(p.t.FP32, float32(f))
	case oip.FP64:
		if !isNumber(tok) {
			return 0, p.errf("element %d (%.20q) is not a number", p.count-1, s)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, p.errf("element %d (%.20q) does not fit FP64", p.count-1, s)
		}
		p.t.FP64 = append(p.t.FP64, f)
	case oip.INT64, oip.INT8, oip.INT16, oip.INT32:
		v, err := strconv.ParseInt(s, 10, 8*p.t.Datatype.Size())
		if err != nil || !isNumber(tok) {
			return 0, p.errf("element %d (%.20q) is not an integer in range of %s", p.count-1, s, p.t.Datatype)
		}
		if p.t.Datatype == oip.INT64 {
			p.t.INT64 = append(p.t.INT64, v)
		} else {
			p.t.INT32 = append(p.t.INT32, int32(v))
		}
	case oip.UINT8, oip.UINT16, oip.UINT32, oip.UINT64:
		v, err := strconv.ParseUint(s, 10, 8*p.t.Datatype.Size())
		if err != nil || !isNumber(tok) {
			return 0, p.errf("element %d (%.20q) is not an integer in range of %s", p.count-1, s, p.t.Datatype)
		}
		p.t.UINT64 = append(p.t.UINT64, v)
	case oip.BOOL:
		switch s {
		case "true":
			p.t.BOOL = append(p.t.BOOL, true)
		case "false":
			p.t.BOOL = append(p.t.BOOL, false)
		default:
			return 0, p.errf("element %d (%.20q) is not a bool", p.count-1, s)
		}
	}
	return j, nil
}

// isNumber reports whether tok is a JSON number (strconv also accepts
// "inf", "0x1p3", underscores and a leading '+', which JSON does not).
func isNumber(tok []byte) bool {
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	if i == len(tok) {
		return false
	}
	if tok[i] == '0' {
		i++
	} else if tok[i] >= '1' && tok[i] <= '9' {
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
	} else {
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		d := i
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		d := i
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(tok)
}

// ---- requests and responses ----

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
