package oip_test

import (
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// TestLimits pins the sizes derived from the forecaster contract and the
// header checks made before any data is decoded.
func TestLimits(t *testing.T) {
	t.Parallel()
	lim := oip.Contract{Lookback: 168, Horizon: 96}.Metadata("m", nil, "").Limits(1024)
	if got, want := lim.MaxJSONBytes(), int64(1024*169*oip.MaxJSONBytesPerValue+oip.RequestOverheadBytes); got != want {
		t.Fatalf("MaxJSONBytes=%d, want %d", got, want)
	}
	if got, want := lim.MaxBinaryBytes(), int64(1024*(168*4+10)+oip.RequestOverheadBytes); got != want {
		t.Fatalf("MaxBinaryBytes=%d, want %d", got, want)
	}
	hist := func(shape ...int64) oip.Tensor {
		return oip.Tensor{Name: oip.InputHistory, Datatype: oip.FP32, Shape: shape}
	}
	start := func(b int64) oip.Tensor {
		return oip.Tensor{Name: oip.InputStart, Datatype: oip.INT64, Shape: []int64{b, 1}}
	}
	for _, tc := range []struct {
		name   string
		inputs []oip.Tensor
		ok     bool
	}{
		{"largest batch", []oip.Tensor{hist(1024, 168), start(1024)}, true},
		{"batch above the maximum", []oip.Tensor{hist(100000000, 168), start(100000000)}, false},
		{"negative batch", []oip.Tensor{hist(-1, 168), start(-1)}, false},
		{"wrong lookback", []oip.Tensor{hist(1, 48), start(1)}, false},
		{"missing start", []oip.Tensor{hist(1, 168)}, false},
		{"extra input", []oip.Tensor{hist(1, 168), start(1), {Name: "x", Datatype: oip.FP32, Shape: []int64{1}}}, false},
	} {
		err := lim.Check(tc.inputs)
		if (err == nil) != tc.ok || (err != nil && forecast.ErrorCode(err) != forecast.EINVALID) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
