package rest

// The tensor and request parameters of the REST protocol and its binary extension.

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/carbongate/carbongate/oip"
)

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
