package rest

// The JSON tensor data parser: flat or nested row-major arrays, bounded nesting.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

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
