package oip

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/carbongate/carbongate/forecast"
)

// The raw form of tensor data shared by the REST binary data extension and
// gRPC's raw_input_contents / raw_output_contents (the Triton and KServe
// convention): elements little endian, row major, at the datatype's width;
// BOOL one byte, 0 or 1; BYTES each element a 4-byte little-endian length
// then its bytes. AppendRaw writes it and DecodeRaw reads it; both
// transports use them, so the two cannot drift apart.

// AppendRaw appends t's data in the raw form to buf. t must be valid.
func AppendRaw(buf []byte, t *Tensor) []byte {
	le := binary.LittleEndian
	buf = grow(buf, rawSize(t))
	switch t.Datatype {
	case FP32:
		for _, v := range t.FP32 {
			buf = le.AppendUint32(buf, math.Float32bits(v))
		}
	case FP64:
		for _, v := range t.FP64 {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
	case INT64:
		for _, v := range t.INT64 {
			buf = le.AppendUint64(buf, uint64(v))
		}
	case INT8:
		for _, v := range t.INT32 {
			buf = append(buf, byte(v))
		}
	case INT16:
		for _, v := range t.INT32 {
			buf = le.AppendUint16(buf, uint16(v))
		}
	case INT32:
		for _, v := range t.INT32 {
			buf = le.AppendUint32(buf, uint32(v))
		}
	case UINT8:
		for _, v := range t.UINT64 {
			buf = append(buf, byte(v))
		}
	case UINT16:
		for _, v := range t.UINT64 {
			buf = le.AppendUint16(buf, uint16(v))
		}
	case UINT32:
		for _, v := range t.UINT64 {
			buf = le.AppendUint32(buf, uint32(v))
		}
	case UINT64:
		for _, v := range t.UINT64 {
			buf = le.AppendUint64(buf, v)
		}
	case BOOL:
		for _, v := range t.BOOL {
			if v {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		}
	case BYTES:
		for _, v := range t.BYTES {
			buf = le.AppendUint32(buf, uint32(len(v)))
			buf = append(buf, v...)
		}
	}
	return buf
}

// rawSize is the length of t's raw form.
func rawSize(t *Tensor) int {
	if t.Datatype == BYTES {
		n := 0
		for _, e := range t.BYTES {
			n += 4 + len(e)
		}
		return n
	}
	return t.Datatype.Size() * t.Len()
}

// grow makes room for n more bytes in b.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n+len(b)/4)
		copy(nb, b)
		return nb
	}
	return b
}

// DecodeRaw sets the data of t (its Name, Datatype and Shape set) from raw,
// which must hold exactly n elements. form names the data in errors
// ("binary data", "raw contents"); errors are EINVALID naming t.Name. The
// tensor owns its data afterwards (BYTES elements are copied out of raw).
func DecodeRaw(t *Tensor, raw []byte, n int, form string) error {
	if t.Datatype == BYTES {
		return decodeRawBytes(t, raw, n, form)
	}
	sz := t.Datatype.Size()
	if sz == 0 || len(raw) != n*sz {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: %s of %d bytes, shape %v of %s needs %d", t.Name, form, len(raw), t.Shape, t.Datatype, n*sz)
	}
	le := binary.LittleEndian
	switch t.Datatype {
	case FP32:
		t.FP32 = make([]float32, n)
		for i := range t.FP32 {
			t.FP32[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case FP64:
		t.FP64 = make([]float64, n)
		for i := range t.FP64 {
			t.FP64[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case INT64:
		t.INT64 = make([]int64, n)
		for i := range t.INT64 {
			t.INT64[i] = int64(le.Uint64(raw[8*i:]))
		}
	case INT8, INT16, INT32:
		t.INT32 = make([]int32, n)
		for i := range t.INT32 {
			switch sz {
			case 1:
				t.INT32[i] = int32(int8(raw[i]))
			case 2:
				t.INT32[i] = int32(int16(le.Uint16(raw[2*i:])))
			default:
				t.INT32[i] = int32(le.Uint32(raw[4*i:]))
			}
		}
	case UINT8, UINT16, UINT32, UINT64:
		t.UINT64 = make([]uint64, n)
		for i := range t.UINT64 {
			switch sz {
			case 1:
				t.UINT64[i] = uint64(raw[i])
			case 2:
				t.UINT64[i] = uint64(le.Uint16(raw[2*i:]))
			case 4:
				t.UINT64[i] = uint64(le.Uint32(raw[4*i:]))
			default:
				t.UINT64[i] = le.Uint64(raw[8*i:])
			}
		}
	case BOOL:
		t.BOOL = make([]bool, n)
		for i := range t.BOOL {
			switch raw[i] {
			case 0:
			case 1:
				t.BOOL[i] = true
			default:
				return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: BOOL byte %d of the %s is %d, want 0 or 1", t.Name, i, form, raw[i])
			}
		}
	}
	return nil
}

func decodeRawBytes(t *Tensor, raw []byte, n int, form string) error {
	le := binary.LittleEndian
	out := make([][]byte, 0, min(n, len(raw)/4+1))
	for len(raw) > 0 {
		if len(raw) < 4 {
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: BYTES %s end inside a length prefix", t.Name, form)
		}
		l := le.Uint32(raw)
		raw = raw[4:]
		if uint64(l) > uint64(len(raw)) {
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: BYTES element %d claims %d bytes, %d remain in the %s", t.Name, len(out), l, len(raw), form)
		}
		if len(out) == n {
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: BYTES %s hold more than the %d elements of shape %v", t.Name, form, n, t.Shape)
		}
		out = append(out, bytes.Clone(raw[:l:l]))
		raw = raw[l:]
	}
	if len(out) != n {
		return forecast.FieldErrorf(forecast.EINVALID, t.Name, "tensor %q: shape %v holds %d elements, the BYTES %s have %d", t.Name, t.Shape, n, form, len(out))
	}
	t.BYTES = out
	return nil
}
