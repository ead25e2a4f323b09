package rest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// serve starts the Handler over b and returns a client for it.
func serve(tb testing.TB, b oip.Backend, hopts []HandlerOption, copts ...ClientOption) (*Client, *httptest.Server) {
	tb.Helper()
	srv := httptest.NewServer(NewHandler(b, hopts...))
	tb.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, copts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, srv
}

// fake starts a server answering every request with fn.
func fake(tb testing.TB, fn http.HandlerFunc, copts ...ClientOption) *Client {
	tb.Helper()
	srv := httptest.NewServer(fn)
	tb.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, copts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxT(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var modes = []struct {
	name string
	opts []ClientOption
}{
	{name: "json", opts: nil},
	{name: "binary inputs", opts: []ClientOption{WithBinaryInputs(true)}},
	{name: "binary outputs", opts: []ClientOption{WithBinaryOutputs(true)}},
	{name: "binary both", opts: []ClientOption{WithBinaryInputs(true), WithBinaryOutputs(true)}},
}

func TestInferForecast(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			be := newTestBackend()
			c, _ := serve(t, be, nil, m.opts...)
			ctx := ctxT(t)
			md, err := c.ModelMetadata(ctx, "forecaster", "")
			if err != nil {
				t.Fatal(err)
			}
			con, err := oip.ContractOf(md)
			if err != nil {
				t.Fatal(err)
			}
			if con != smallContract {
				t.Fatalf("contract=%+v, want %+v", con, smallContract)
			}
			hist := [][]float64{{1, 2, 3, 4.5}, {10, 20, 30, 40}}
			req, err := oip.NewForecastRequest("req-7", hist, []time.Time{t0, t0.Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Infer(ctx, "forecaster", "", req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ID != "req-7" || resp.ModelName != "forecaster" || resp.ModelVersion != "1" {
				t.Fatalf("id/model/version=%q/%q/%q, want req-7/forecaster/1", resp.ID, resp.ModelName, resp.ModelVersion)
			}
			fc, lo, hi, err := oip.ParseForecastResponse(resp, 2, con)
			if err != nil {
				t.Fatal(err)
			}
			want := [][]float64{{5.5, 6.5, 7.5}, {41, 42, 43}}
			if !reflect.DeepEqual(fc, want) {
				t.Fatalf("forecast=%v, want %v", fc, want)
			}
			if lo[1][0] != 40 || hi[1][2] != 44 {
				t.Fatalf("lower=%v upper=%v", lo, hi)
			}
			// The request reached the backend exactly, whatever the encoding.
			_, got := be.last()
			if !reflect.DeepEqual(got.Inputs, req.Inputs) {
				t.Fatalf("backend saw %+v, want %+v", got.Inputs, req.Inputs)
			}
		})
	}
}

func allTypes() []oip.Tensor {
	return []oip.Tensor{
		{Name: "f32", Datatype: oip.FP32, Shape: []int64{2, 2}, FP32: []float32{1.5, -2, 3.25e-20, math.MaxFloat32}},
		{Name: "f64", Datatype: oip.FP64, Shape: []int64{3}, FP64: []float64{math.Pi, -1e300, 0}},
		{Name: "i64", Datatype: oip.INT64, Shape: []int64{2}, INT64: []int64{math.MinInt64, math.MaxInt64}},
		{Name: "i32", Datatype: oip.INT32, Shape: []int64{1, 2}, INT32: []int32{math.MinInt32, 7}},
		{Name: "i16", Datatype: oip.INT16, Shape: []int64{2}, INT32: []int32{-32768, 32767}},
		{Name: "i8", Datatype: oip.INT8, Shape: []int64{2}, INT32: []int32{-128, 127}},
		{Name: "u8", Datatype: oip.UINT8, Shape: []int64{2}, UINT64: []uint64{0, 255}},
		{Name: "u16", Datatype: oip.UINT16, Shape: []int64{1}, UINT64: []uint64{65535}},
		{Name: "u32", Datatype: oip.UINT32, Shape: []int64{1}, UINT64: []uint64{math.MaxUint32}},
		{Name: "u64", Datatype: oip.UINT64, Shape: []int64{1}, UINT64: []uint64{math.MaxUint64}},
		{Name: "b", Datatype: oip.BOOL, Shape: []int64{3}, BOOL: []bool{true, false, true}},
		{Name: "s", Datatype: oip.BYTES, Shape: []int64{2}, BYTES: [][]byte{[]byte("hé \"x\"\n"), {}}},
		{Name: "scalar", Datatype: oip.FP32, Shape: []int64{}, FP32: []float32{2}},
		{Name: "empty", Datatype: oip.INT64, Shape: []int64{0, 3}, INT64: []int64{}},
		{Name: "p", Datatype: oip.INT64, Shape: []int64{1}, INT64: []int64{1}, Parameters: oip.Parameters{"content_type": "np", "n": int64(3)}},
	}
}

// normalize maps empty data slices to nil for comparison.
func normalize(ts []oip.Tensor) []oip.Tensor {
	out := make([]oip.Tensor, len(ts))
	for i, t := range ts {
		if t.Len() == 0 {
			t.FP32, t.FP64, t.INT64, t.INT32, t.UINT64, t.BOOL, t.BYTES = nil, nil, nil, nil, nil, nil, nil
		}
		out[i] = t
	}
	return out
}

func TestInferAllDatatypes(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			c, _ := serve(t, newTestBackend(), nil, m.opts...)
			req := &oip.InferenceRequest{ID: "e", Parameters: oip.Parameters{"k": "v", "f": 1.5}, Inputs: allTypes()}
			resp, err := c.Infer(ctxT(t), "echo", "", req)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := normalize(resp.Outputs), normalize(allTypes()); !reflect.DeepEqual(got, want) {
				t.Fatalf("outputs=%+v\nwant    %+v", got, want)
			}
			if resp.Parameters["k"] != "v" || resp.Parameters["f"] != 1.5 {
				t.Fatalf("parameters=%v", resp.Parameters)
			}
			if _, ok := resp.Parameters[ParamBinaryOutput]; ok != (m.name == "binary outputs" || m.name == "binary both") {
				t.Fatalf("parameters=%v: binary_data_output must be sent exactly when asked", resp.Parameters)
			}
			if !reflect.DeepEqual(req.Inputs, allTypes()) || len(req.Parameters) != 2 {
				t.Fatal("Infer changed the caller's request")
			}
		})
	}
}

// post sends a raw body to the handler.
func post(tb testing.TB, srv *httptest.Server, path string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(ctxT(tb), http.MethodPost, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func TestDataNestedAndFlat(t *testing.T) {
	t.Parallel()
	be := newTestBackend()
	_, srv := serve(t, be, nil)
	tests := []struct {
		name   string
		data   string
		shape  string
		dt     string
		status int
		want   any
	}{
		{name: "flat", data: `[1,2,3,4,5,6]`, shape: `[2,3]`, dt: "FP32", status: 200, want: []float32{1, 2, 3, 4, 5, 6}},
		{name: "nested", data: `[[1,2,3],[4,5,6]]`, shape: `[2,3]`, dt: "FP32", status: 200, want: []float32{1, 2, 3, 4, 5, 6}},
		{name: "nested 3-D", data: ` [ [[1],[2]] , [[3],[4]] ] `, shape: `[2,2,1]`, dt: "INT64", status: 200, want: []int64{1, 2, 3, 4}},
		{name: "scalar bare", data: `7`, shape: `[]`, dt: "INT32", status: 200, want: []int32{7}},
		{name: "scalar in array", data: `[7]`, shape: `[]`, dt: "INT32", status: 200, want: []int32{7}},
		{name: "bool nested", data: `[[true],[false]]`, shape: `[2,1]`, dt: "BOOL", status: 200, want: []bool{true, false}},
		{name: "bytes escaped", data: `["a\u00e9\"", "b"]`, shape: `[2]`, dt: "BYTES", status: 200, want: [][]byte{[]byte("aé\""), []byte("b")}},
		{name: "nested wrong row length", data: `[[1,2],[3,4,5,6]]`, shape: `[2,3]`, dt: "FP32", status: 400},
		{name: "nested transposed", data: `[[1,2],[3,4],[5,6]]`, shape: `[2,3]`, dt: "FP32", status: 400},
		{name: "irregular depth", data: `[[1,2,3],4,5,6]`, shape: `[2,3]`, dt: "FP32", status: 400},
		{name: "partial nesting", data: `[[[1,2,3],[4,5,6]]]`, shape: `[2,3]`, dt: "FP32", status: 400},
		{name: "too few", data: `[1,2,3]`, shape: `[2,3]`, dt: "FP32", status: 400},
		{name: "too many", data: `[1,2,3,4,5,6,7]`, shape: `[2,3]`, dt: "FP32", status: 400},
		{name: "string number", data: `["1",2]`, shape: `[2]`, dt: "FP32", status: 400},
		{name: "fp32 overflow", data: `[1e39]`, shape: `[1]`, dt: "FP32", status: 400},
		{name: "int fraction", data: `[1.5]`, shape: `[1]`, dt: "INT64", status: 400},
		{name: "int8 range", data: `[128]`, shape: `[1]`, dt: "INT8", status: 400},
		{name: "uint negative", data: `[-1]`, shape: `[1]`, dt: "UINT8", status: 400},
		{name: "bool as number", data: `[1]`, shape: `[1]`, dt: "BOOL", status: 400},
		{name: "null", data: `null`, shape: `[1]`, dt: "FP32", status: 400},
		{name: "object", data: `{"a":1}`, shape: `[1]`, dt: "FP32", status: 400},
		{name: "nan literal is not JSON", data: `[NaN]`, shape: `[1]`, dt: "FP32", status: 400},
		{name: "negative dim", data: `[]`, shape: `[-1]`, dt: "FP32", status: 400},
		{name: "huge shape, tiny data", data: `[1]`, shape: `[2147483647]`, dt: "FP64", status: 400},
		{name: "fp16", data: `[1]`, shape: `[1]`, dt: "FP16", status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"id":"n","inputs":[{"name":"x","datatype":"` + tt.dt + `","shape":` + tt.shape + `,"data":` + tt.data + `}]}`
			status, hdr, b := post(t, srv, "/v2/models/echo/infer", []byte(body), nil)
			if status != tt.status {
				t.Fatalf("status=%d (%s), want %d", status, b, tt.status)
			}
			if status != 200 {
				var we wireError
				if err := json.Unmarshal(b, &we); err != nil || we.Error == "" || hdr.Get("Content-Type") != "application/json" {
					t.Fatalf("error body %q is not {\"error\": ...} JSON", b)
				}
				return
			}
			_, req := be.last()
			x := req.Input("x")
			var got any
			switch x.Datatype {
			case oip.FP32:
				got = x.FP32
			case oip.INT64:
				got = x.INT64
			case oip.INT32:
				got = x.INT32
			case oip.BOOL:
				got = x.BOOL
			case oip.BYTES:
				got = x.BYTES
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decoded %v, want %v", got, tt.want)
			}
			// Output is always flat.
			var w struct {
				Outputs []struct {
					Data json.RawMessage `json:"data"`
				} `json:"outputs"`
			}
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
			if bytes.Count(w.Outputs[0].Data, []byte("[")) != 1 {
				t.Fatalf("output data %s is not flat", w.Outputs[0].Data)
			}
		})
	}
}

func TestBinaryWire(t *testing.T) {
	t.Parallel()
	be := newTestBackend()
	_, srv := serve(t, be, nil)
	f32 := func(vs ...float32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		return b
	}
	i64 := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	type tc struct {
		name   string
		json   string
		bin    []byte
		hdrLen string // "" = len(json)
		status int
	}
	hist := `{"name":"history","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":16}}`
	start := `{"name":"start_unix","datatype":"INT64","shape":[1,1],"parameters":{"binary_data_size":8}}`
	startJSON := `{"name":"start_unix","datatype":"INT64","shape":[1,1],"data":[` + strconv.FormatInt(t0.Unix(), 10) + `]}`
	tests := []tc{
		{name: "both binary", json: `{"inputs":[` + hist + `,` + start + `]}`, bin: append(f32(1, 2, 3, 4), i64(t0.Unix())...), status: 200},
		{name: "mixed", json: `{"inputs":[` + hist + `,` + startJSON + `]}`, bin: f32(1, 2, 3, 4), status: 200},
		{name: "short", json: `{"inputs":[` + hist + `,` + start + `]}`, bin: f32(1, 2, 3, 4), status: 400},
		{name: "trailing bytes", json: `{"inputs":[` + hist + `,` + startJSON + `]}`, bin: append(f32(1, 2, 3, 4), 0), status: 400},
		{name: "size mismatch", json: `{"inputs":[{"name":"history","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":12}},` + startJSON + `]}`, bin: f32(1, 2, 3), status: 400},
		{name: "header too long", json: `{"inputs":[` + hist + `,` + start + `]}`, hdrLen: "100000", status: 400},
		{name: "header negative", json: `{"inputs":[` + hist + `,` + start + `]}`, hdrLen: "-1", status: 400},
		{name: "data and binary", json: `{"inputs":[{"name":"history","datatype":"FP32","shape":[1,4],"data":[1,2,3,4],"parameters":{"binary_data_size":16}},` + startJSON + `]}`, bin: f32(1, 2, 3, 4), status: 400},
		{name: "size not integer", json: `{"inputs":[{"name":"history","datatype":"FP32","shape":[1,4],"parameters":{"binary_data_size":"16"}},` + startJSON + `]}`, bin: f32(1, 2, 3, 4), status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hl := tt.hdrLen
			if hl == "" {
				hl = strconv.Itoa(len(tt.json))
			}
			body := append([]byte(tt.json), tt.bin...)
			status, _, b := post(t, srv, "/v2/models/forecaster/infer", body, map[string]string{HeaderInferenceLength: hl, "Content-Type": "application/octet-stream"})
			if status != tt.status {
				t.Fatalf("status=%d (%s), want %d", status, b, tt.status)
			}
		})
	}

	// binary_data_size without the header is refused.
	status, _, _ := post(t, srv, "/v2/models/forecaster/infer", []byte(`{"inputs":[`+hist+`,`+startJSON+`]}`), nil)
	if status != 400 {
		t.Fatalf("binary_data_size without header: status=%d, want 400", status)
	}

	// Per-output binary_data overrides binary_data_output; outputs filtered
	// to the requested ones, in request order.
	body := `{"id":"b","parameters":{"binary_data_output":true},"inputs":[{"name":"history","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},` + startJSON + `],` +
		`"outputs":[{"name":"upper"},{"name":"forecast","parameters":{"binary_data":false}}]}`
	status, hdr, b := post(t, srv, "/v2/models/forecaster/infer", []byte(body), nil)
	if status != 200 {
		t.Fatalf("status=%d (%s)", status, b)
	}
	n, err := strconv.Atoi(hdr.Get(HeaderInferenceLength))
	if err != nil || n <= 0 || n >= len(b) {
		t.Fatalf("%s=%q for a body of %d bytes", HeaderInferenceLength, hdr.Get(HeaderInferenceLength), len(b))
	}
	var w struct {
		ID      string `json:"id"`
		Outputs []struct {
			Name       string          `json:"name"`
			Parameters map[string]any  `json:"parameters"`
			Data       json.RawMessage `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b[:n], &w); err != nil {
		t.Fatal(err)
	}
	if w.ID != "b" || len(w.Outputs) != 2 || w.Outputs[0].Name != "upper" || w.Outputs[1].Name != "forecast" {
		t.Fatalf("response header %s", b[:n])
	}
	if w.Outputs[0].Parameters["binary_data_size"] != float64(12) || w.Outputs[0].Data != nil {
		t.Fatalf("upper should be binary of 12 bytes: %s", b[:n])
	}
	if string(w.Outputs[1].Data) != "[5,6,7]" {
		t.Fatalf("forecast should be JSON [5,6,7]: %s", b[:n])
	}
	if got := b[n:]; !bytes.Equal(got, f32(6, 7, 8)) {
		t.Fatalf("binary tail=%v, want upper [6 7 8]", got)
	}
}

func TestMetadataAndReadiness(t *testing.T) {
	t.Parallel()
	be := newTestBackend()
	c, _ := serve(t, be, nil)
	ctx := ctxT(t)

	sm, err := c.ServerMetadata(ctx)
	if err != nil || sm.Name != "test" || sm.Version != "0.1" || !reflect.DeepEqual(sm.Extensions, []string{"binary_tensor_data"}) {
		t.Fatalf("ServerMetadata=%+v, %v", sm, err)
	}
	md, err := c.ModelMetadata(ctx, "big", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := bigContract.Metadata("big", []string{"1"}, "test"); !reflect.DeepEqual(md, want) {
		t.Fatalf("ModelMetadata=%+v, want %+v", md, want)
	}
	_, err = c.ModelMetadata(ctx, "nope", "")
	code(t, err, forecast.ENOTFOUND)

	if err := c.ServerLive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.ServerReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.ModelReady(ctx, "forecaster", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.ModelReady(ctx, "forecaster", "1"); err != nil {
		t.Fatal(err)
	}
	code(t, c.ModelReady(ctx, "cold", ""), forecast.EUNAVAILABLE)
	code(t, c.ModelReady(ctx, "nope", ""), forecast.ENOTFOUND)

	be.setHealth(true, false)
	code(t, c.ServerReady(ctx), forecast.EUNAVAILABLE)
	if err := c.ServerLive(ctx); err != nil {
		t.Fatal(err)
	}
	be.setHealth(false, false)
	code(t, c.ServerLive(ctx), forecast.EUNAVAILABLE)
}

func TestVersionsAndModelEscaping(t *testing.T) {
	t.Parallel()
	be := newTestBackend()
	c, _ := serve(t, be, nil)
	req := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.INT64, Shape: []int64{1}, INT64: []int64{1}}}}
	resp, err := c.Infer(ctxT(t), "echo", "v 2/b", req)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := be.last(); v != "v 2/b" || resp.ModelVersion != "v 2/b" {
		t.Fatalf("backend saw version %q, response %q; want %q", v, resp.ModelVersion, "v 2/b")
	}
	_, err = c.Infer(ctxT(t), "no/such", "", req)
	code(t, err, forecast.ENOTFOUND)
}

func TestServerErrorMapping(t *testing.T) {
	t.Parallel()
	be := newTestBackend()
	c, srv := serve(t, be, []HandlerOption{WithMaxBodyBytes(4096)})
	ctx := ctxT(t)
	good, err := oip.NewForecastRequest("", [][]float64{{1, 2, 3, 4}}, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	wrongL, _ := oip.NewForecastRequest("", [][]float64{{1, 2, 3}}, []time.Time{t0})
	big := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP64, Shape: []int64{5000}, FP64: make([]float64, 5000)}}}
	tests := []struct {
		name  string
		model string
		req   *oip.InferenceRequest
		code  string
		msg   string
	}{
		{name: "bad input 400", model: "forecaster", req: wrongL, code: forecast.EINVALID, msg: "model wants 4"},
		{name: "unknown model 404", model: "nope", req: good, code: forecast.ENOTFOUND, msg: `model "nope" not found`},
		{name: "not ready 503", model: "cold", req: good, code: forecast.EUNAVAILABLE, msg: "not ready"},
		{name: "internal 500 generic", model: "boom", req: good, code: forecast.EINTERNAL, msg: "500: internal error"},
		{name: "nan cannot be JSON", model: "nan", req: good, code: forecast.EINTERNAL, msg: "internal error"},
		{name: "body limit 413", model: "echo", req: big, code: forecast.EINVALID, msg: "413"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Infer(ctx, tt.model, "", tt.req)
			code(t, err, tt.code)
			contains(t, err, tt.msg)
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("internal error leaked: %v", err)
			}
		})
	}

	// NaN travels in binary, and the contract parser refuses it.
	cb, err := NewClient(srv.URL, WithBinaryOutputs(true))
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	resp, err := cb.Infer(ctx, "nan", "", good)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = oip.ParseForecastResponse(resp, 1, smallContract)
	code(t, err, forecast.EINVALID)
	contains(t, err, "not finite")

	// Wrong method, unknown route, garbage body: JSON errors.
	for _, tt := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/v2/models/echo/infer", "", 405},
		{"DELETE", "/v2/models/echo", "", 405},
		{"GET", "/v3/models", "", 404},
		{"POST", "/v2/models/echo/infer", "{not json", 400},
		{"POST", "/v2/models/echo/infer", `{"inputs":[]}`, 400},
		{"POST", "/v2/models/echo/infer", `{"inputs":[{"name":"x","datatype":"INT64","shape":[1],"data":[1]},{"name":"x","datatype":"INT64","shape":[1],"data":[1]}]}`, 400},
		{"POST", "/v2/models/echo/infer", `{"inputs":[{"name":"x","datatype":"INT64","shape":[1],"data":[1]}],"outputs":[{"name":"y"}]}`, 400},
	} {
		req, _ := http.NewRequestWithContext(ctx, tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var we wireError
		if resp.StatusCode != tt.status || json.Unmarshal(b, &we) != nil || we.Error == "" {
			t.Fatalf("%s %s: %d %s, want %d with {\"error\"}", tt.method, tt.path, resp.StatusCode, b, tt.status)
		}
	}
}

func TestClientErrorMapping(t *testing.T) {
	t.Parallel()
	req := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.INT64, Shape: []int64{1}, INT64: []int64{1}}}}
	tests := []struct {
		name   string
		status int
		body   string
		code   string
		msg    string
	}{
		{name: "kserve 400", status: 400, body: `{"error":"Invalid input: shape mismatch"}`, code: forecast.EINVALID, msg: "shape mismatch"},
		{name: "mlserver 400 not ready", status: 400, body: `{"error":"Model forecaster with version  is not ready yet."}`, code: forecast.EUNAVAILABLE, msg: "not ready"},
		{name: "400 Not Ready upper case", status: 400, body: `{"error":"Model NOT READY"}`, code: forecast.EUNAVAILABLE},
		{name: "404", status: 404, body: `{"error":"Model with name x does not exist."}`, code: forecast.ENOTFOUND, msg: "does not exist"},
		{name: "kserve 501 versions", status: 501, body: `{"error":"Model versioning is not supported"}`, code: forecast.EINVALID, msg: "version"},
		{name: "502", status: 502, body: `<html>bad gateway</html>`, code: forecast.EUNAVAILABLE, msg: "bad gateway"},
		{name: "503", status: 503, body: `{"error":"Model is not ready"}`, code: forecast.EUNAVAILABLE},
		{name: "504 empty", status: 504, body: ``, code: forecast.EUNAVAILABLE, msg: "Gateway Timeout"},
		{name: "500", status: 500, body: `{"error":"boom"}`, code: forecast.EINTERNAL, msg: "boom"},
		{name: "401", status: 401, body: ``, code: forecast.EUNAUTHORIZED},
		{name: "422", status: 422, body: `{"detail":"x"}`, code: forecast.EINVALID},
		{name: "200 garbage", status: 200, body: `<html>`, code: forecast.EINVALID, msg: "malformed JSON response"},
		{name: "200 bad tensor", status: 200, body: `{"model_name":"m","outputs":[{"name":"y","datatype":"FP32","shape":[2],"data":[1]}]}`, code: forecast.EINVALID, msg: "holds 2 elements"},
		{name: "200 wrong id", status: 200, body: `{"model_name":"m","id":"other","outputs":[]}`, code: forecast.EINVALID, msg: "does not echo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			r := *req
			r.ID = "mine"
			_, err := c.Infer(ctxT(t), "m", "", &r)
			code(t, err, tt.code)
			if tt.msg != "" {
				contains(t, err, tt.msg)
			}
		})
	}
}

func TestClientTransportErrors(t *testing.T) {
	t.Parallel()
	req := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.INT64, Shape: []int64{1}, INT64: []int64{1}}}}

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := NewClient("http://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Infer(ctxT(t), "m", "", req)
		code(t, err, forecast.EUNAVAILABLE)
		code(t, c.ServerLive(ctxT(t)), forecast.EUNAVAILABLE)
	})

	hang := func(t *testing.T) (*httptest.Server, chan struct{}) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release); srv.Close() })
		return srv, release
	}

	t.Run("ctx deadline kept in chain", func(t *testing.T) {
		t.Parallel()
		srv, _ := hang(t)
		c, _ := NewClient(srv.URL)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Infer(ctx, "m", "", req)
		code(t, err, forecast.EUNAVAILABLE)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err=%v, want context.DeadlineExceeded in chain", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})

	t.Run("default timeout when ctx has none", func(t *testing.T) {
		t.Parallel()
		srv, _ := hang(t)
		c, _ := NewClient(srv.URL, WithTimeout(50*time.Millisecond))
		defer c.Close()
		start := time.Now()
		err := c.ServerReady(context.Background())
		code(t, err, forecast.EUNAVAILABLE)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err=%v, want context.DeadlineExceeded in chain", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})

	t.Run("canceled", func(t *testing.T) {
		t.Parallel()
		srv, _ := hang(t)
		c, _ := NewClient(srv.URL)
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := c.Infer(ctx, "m", "", req)
		code(t, err, forecast.EUNAVAILABLE)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err=%v, want context.Canceled in chain", err)
		}
	})

	t.Run("response too large", func(t *testing.T) {
		t.Parallel()
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write(make([]byte, 2048))
		}, WithMaxResponseBytes(1024))
		_, err := c.Infer(ctxT(t), "m", "", req)
		code(t, err, forecast.EUNAVAILABLE)
	})

	t.Run("bad base URL", func(t *testing.T) {
		t.Parallel()
		for _, u := range []string{"", "localhost:8080", "ftp://x", "http://", "http://h/?q=1"} {
			if _, err := NewClient(u); forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("NewClient(%q)=%v, want EINVALID", u, err)
			}
		}
	})

	t.Run("invalid request refused before sending", func(t *testing.T) {
		t.Parallel()
		var hits atomic.Int32
		c := fake(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
		bad := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP32, Shape: []int64{2}, FP32: []float32{1}}}}
		_, err := c.Infer(ctxT(t), "m", "", bad)
		code(t, err, forecast.EINVALID)
		nan := &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "x", Datatype: oip.FP32, Shape: []int64{1}, FP32: []float32{float32(math.NaN())}}}}
		_, err = c.Infer(ctxT(t), "m", "", nan)
		code(t, err, forecast.EINVALID)
		contains(t, err, "use binary")
		if hits.Load() != 0 {
			t.Fatalf("server hit %d times", hits.Load())
		}
	})
}

// TestHealthByStatusOnly: real servers disagree on bodies; only the status
// counts.
func TestHealthByStatusOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{name: "200 empty (MLServer)", status: 200, body: "", ok: true},
		{name: "200 live true (KServe)", status: 200, body: `{"live":true}`, ok: true},
		{name: "200 ready false body", status: 200, body: `{"ready":false}`, ok: true},
		{name: "200 garbage", status: 200, body: `<html>`, ok: true},
		{name: "204", status: 204, ok: true},
		{name: "503 with error", status: 503, body: `{"error":"Model is not ready"}`},
		{name: "503 empty", status: 503},
		{name: "500 live true", status: 500, body: `{"live":true}`},
		{name: "400 not ready (MLServer)", status: 400, body: `{"error":"not ready"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			ctx := ctxT(t)
			for _, call := range []func() error{
				func() error { return c.ServerLive(ctx) },
				func() error { return c.ServerReady(ctx) },
				func() error { return c.ModelReady(ctx, "m", "") },
			} {
				err := call()
				if tt.ok && err != nil {
					t.Fatalf("err=%v, want nil", err)
				}
				if !tt.ok {
					code(t, err, forecast.EUNAVAILABLE)
				}
			}
		})
	}
	t.Run("model ready 404 and 501", func(t *testing.T) {
		t.Parallel()
		c := fake(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/versions/") {
				w.WriteHeader(501)
				return
			}
			w.WriteHeader(404)
		})
		code(t, c.ModelReady(ctxT(t), "m", ""), forecast.ENOTFOUND)
		code(t, c.ModelReady(ctxT(t), "m", "2"), forecast.EINVALID)
	})
}

func TestHostOverrideAndConnectionReuse(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		hosts []string
		conns atomic.Int32
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hosts = append(hosts, r.Host)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := NewClient(srv.URL+"/", WithHost("zone-de.carbon.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 5 {
		if err := c.ServerLive(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) != 5 {
		t.Fatalf("%d requests seen, want 5", len(hosts))
	}
	for _, h := range hosts {
		if h != "zone-de.carbon.example.com" {
			t.Fatalf("Host=%q, want the override", h)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 5 sequential calls, want 1", n)
	}
}

func TestPathPrefix(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/serving/", http.StripPrefix("/serving", NewHandler(newTestBackend())))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := NewClient(srv.URL + "/serving")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.ModelReady(ctxT(t), "forecaster", ""); err != nil {
		t.Fatal(err)
	}
}
