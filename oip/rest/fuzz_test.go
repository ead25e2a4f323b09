package rest

import (
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// FuzzDecodeRequestJSON: any body decodes without panicking to a request
// or an EINVALID error; a valid request re-encodes to JSON that decodes to
// the same tensors. Seeds: testdata/fuzz/FuzzDecodeRequestJSON.
//
// fuzz budget: 8000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzDecodeRequestJSON(f *testing.F) {
	f.Add([]byte(`{"id":"a","inputs":[{"name":"history","datatype":"FP32","shape":[1,4],"data":[[1,2,3,4]]},{"name":"start_unix","datatype":"INT64","shape":[1,1],"data":[1772366400]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeRequest(body, "", nil)
		if err != nil {
			if forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("error code %q: %v", forecast.ErrorCode(err), err)
			}
			return
		}
		if req.Validate() != nil {
			return
		}
		out, n, err := encodeRequest(nil, req, nil, false)
		if err != nil || n != -1 {
			t.Fatalf("re-encode: %v (json length %d)", err, n)
		}
		again, err := decodeRequest(out, "", nil)
		if err != nil {
			t.Fatalf("decode(encode(req)): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalize(again.Inputs), normalize(req.Inputs)) {
			t.Fatalf("round trip changed inputs:\n%+v\n%+v", req.Inputs, again.Inputs)
		}
	})
}

// FuzzDecodeRequestBinary: the binary extension decoder survives any body
// and header length; a valid request re-encodes with all inputs binary and
// decodes to the same tensors. Seeds: testdata/fuzz/FuzzDecodeRequestBinary.
//
// fuzz budget: 8000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzDecodeRequestBinary(f *testing.F) {
	f.Add([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}}]}`+"\x00\x00\x80?\x00\x00\x00@"), 91)
	f.Fuzz(func(t *testing.T, body []byte, headerLen int) {
		req, err := decodeRequest(body, strconv.Itoa(headerLen), nil)
		if err != nil {
			if forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("error code %q: %v", forecast.ErrorCode(err), err)
			}
			return
		}
		if req.Validate() != nil {
			return
		}
		all := func(*oip.Tensor) bool { return true }
		out, n, err := encodeRequest(nil, req, all, false)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		hl := ""
		if n >= 0 {
			hl = strconv.Itoa(n)
		}
		again, err := decodeRequest(out, hl, nil)
		if err != nil {
			t.Fatalf("decode(encode(req)): %v", err)
		}
		if !reflect.DeepEqual(nanSafe(again.Inputs), nanSafe(req.Inputs)) {
			t.Fatalf("round trip changed inputs:\n%+v\n%+v", req.Inputs, again.Inputs)
		}
	})
}

// nanSafe normalizes and replaces float data by bit patterns so NaN
// compares equal to itself.
func nanSafe(ts []oip.Tensor) []oip.Tensor {
	ts = normalize(ts)
	for i := range ts {
		if ts[i].FP32 != nil {
			u := make([]uint64, len(ts[i].FP32))
			for j, v := range ts[i].FP32 {
				u[j] = uint64(int64(int32(float32bits(v))))
			}
			ts[i].FP32, ts[i].UINT64 = nil, u
		}
		if ts[i].FP64 != nil {
			u := make([]uint64, len(ts[i].FP64))
			for j, v := range ts[i].FP64 {
				u[j] = float64bits(v)
			}
			ts[i].FP64, ts[i].UINT64 = nil, u
		}
	}
	return ts
}

func float32bits(f float32) uint32 { return math.Float32bits(f) }
func float64bits(f float64) uint64 { return math.Float64bits(f) }
