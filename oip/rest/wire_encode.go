package rest

// Encoding requests and responses as JSON with an optional binary tail.

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

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
