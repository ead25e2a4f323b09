package oip

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

// TestRawWorkedExample pins the raw form of each datatype family by hand.
func TestRawWorkedExample(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		t    Tensor
		want []byte
	}{
		{Tensor{Name: "f", Datatype: FP32, Shape: []int64{2}, FP32: []float32{1, -2}}, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{Tensor{Name: "i", Datatype: INT16, Shape: []int64{2}, INT32: []int32{-1, 258}}, []byte{0xff, 0xff, 2, 1}},
		{Tensor{Name: "u", Datatype: UINT8, Shape: []int64{3}, UINT64: []uint64{0, 7, 255}}, []byte{0, 7, 255}},
		{Tensor{Name: "b", Datatype: BOOL, Shape: []int64{2}, BOOL: []bool{true, false}}, []byte{1, 0}},
		{Tensor{Name: "s", Datatype: BYTES, Shape: []int64{2}, BYTES: [][]byte{[]byte("ab"), {}}}, []byte{2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0}},
	} {
		if got := AppendRaw(nil, &tc.t); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: AppendRaw = % x, want % x", tc.t.Name, got, tc.want)
		}
		back := Tensor{Name: tc.t.Name, Datatype: tc.t.Datatype, Shape: tc.t.Shape}
		if err := DecodeRaw(&back, tc.want, tc.t.Len(), "raw contents"); err != nil || !reflect.DeepEqual(back, tc.t) {
			t.Errorf("%s: DecodeRaw = %+v, %v; want %+v", tc.t.Name, back, err, tc.t)
		}
	}
}

func TestDecodeRawErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dt   Datatype
		raw  []byte
		n    int
	}{
		{"short", FP64, make([]byte, 7), 1},
		{"long", INT32, make([]byte, 12), 2},
		{"bool not 0 or 1", BOOL, []byte{2}, 1},
		{"bytes cut in a prefix", BYTES, []byte{1, 0}, 1},
		{"bytes element past the end", BYTES, []byte{9, 0, 0, 0, 'a'}, 1},
		{"more bytes elements than the shape", BYTES, []byte{0, 0, 0, 0, 0, 0, 0, 0}, 1},
		{"fewer bytes elements than the shape", BYTES, []byte{0, 0, 0, 0}, 2},
	} {
		tt := Tensor{Name: "x", Datatype: tc.dt, Shape: []int64{int64(tc.n)}}
		err := DecodeRaw(&tt, tc.raw, tc.n, "binary data")
		if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "x" {
			t.Errorf("%s: %v, want EINVALID naming the tensor", tc.name, err)
		}
	}
}

// FuzzRaw: decoding never panics, and what decodes encodes back to the
// same bytes (the form has one spelling per value).
//
// fuzz budget: 60000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzRaw(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0x80, 0x3f}, 1)
	f.Add(uint8(12), []byte{1, 0, 0, 0, 'a'}, 1)
	f.Add(uint8(11), []byte{1, 0}, 2)
	f.Fuzz(func(t *testing.T, d uint8, raw []byte, n int) {
		dts := []Datatype{FP32, FP64, INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, BOOL, BYTES, BYTES}
		dt := dts[int(d)%len(dts)]
		if n < 0 || n > 1<<16 {
			return
		}
		tt := Tensor{Name: "x", Datatype: dt, Shape: []int64{int64(n)}}
		if DecodeRaw(&tt, raw, n, "raw contents") != nil {
			return
		}
		// Floats too, NaN payloads included: they are copied bit for bit.
		if got := AppendRaw(nil, &tt); !bytes.Equal(got, raw) {
			t.Fatalf("%s: re-encoded % x, want % x", dt, got, raw)
		}
	})
}
