package abuse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/carbongate/carbongate/oip/grpc/inferencepb"
)

func body(note, s string) malformedBody { return malformedBody{note: note, body: []byte(s)} }

// malformedSchedules are broken /v1/schedule bodies: not JSON, wrong
// shapes and types, bad values, nesting, encodings, content types.
func malformedSchedules() []malformedBody {
	return []malformedBody{
		body("empty", ""),
		body("open brace", "{"),
		body("null", "null"),
		body("array", "[]"),
		body("string", `"DE"`),
		body("zones a string", `{"zones":"DE","duration":"PT3H"}`),
		body("zones numbers", `{"zones":[1,2],"duration":"PT3H"}`),
		body("no zones", `{"zones":[],"duration":"PT3H"}`),
		body("unknown zone", `{"zones":["XX"],"duration":"PT3H"}`),
		body("duration a number", `{"zones":["DE"],"duration":3}`),
		body("negative duration", `{"zones":["DE"],"duration":"-PT3H"}`),
		body("huge duration", `{"zones":["DE"],"duration":"P1000000000Y"}`),
		body("bad deadline", `{"zones":["DE"],"duration":"PT3H","deadline":"tomorrow"}`),
		body("huge number", `{"zones":["DE"],"duration":"PT3H","step":1e999}`),
		body("trailing garbage", `{"zones":["DE"],"duration":"PT3H"} {"x":1}`),
		body("duplicate keys", `{"zones":["DE"],"zones":{"a":1},"duration":"PT3H"}`),
		body("invalid UTF-8", "{\"zones\":[\"\xff\xfe\"],\"duration\":\"PT3H\"}"),
		body("NUL bytes", "{\"zones\":[\"DE\x00\"],\"duration\":\"PT3H\"}"),
		body("deep nesting", strings.Repeat("[", 60000)),
		body("long zone", `{"zones":["`+strings.Repeat("D", 60000)+`"],"duration":"PT3H"}`),
		{note: "text/plain", contentType: "text/plain", body: scheduleBody},
		{note: "XML content type", contentType: "application/xml", body: scheduleBody},
	}
}

// malformedReviews are broken AdmissionReviews: broken envelopes (400) and
// well-formed envelopes around broken objects (a review refusing them).
func malformedReviews(valid []byte) []malformedBody {
	var rv map[string]any
	if err := json.Unmarshal(valid, &rv); err != nil {
		panic(err) // the fixture was decoded once already
	}
	with := func(note string, edit func(req map[string]any)) malformedBody {
		var c map[string]any
		b, _ := json.Marshal(rv)
		json.Unmarshal(b, &c)
		edit(c["request"].(map[string]any))
		out, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		return malformedBody{note: note, body: out}
	}
	spec := func(req map[string]any) map[string]any {
		return req["object"].(map[string]any)["spec"].(map[string]any)
	}
	return []malformedBody{
		body("empty", ""),
		body("not JSON", "AdmissionReview"),
		body("null", "null"),
		body("cut", string(valid[:len(valid)/3])),
		body("v1beta1", strings.Replace(string(valid), "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1)),
		body("other kind", `{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"u"}}`),
		body("no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
		body("request a string", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":"x"}`),
		with("no uid", func(r map[string]any) { delete(r, "uid") }),
		with("object a string", func(r map[string]any) { r["object"] = "VmTemplate" }),
		with("object an array", func(r map[string]any) { r["object"] = []int{1, 2} }),
		with("spec null", func(r map[string]any) { r["object"].(map[string]any)["spec"] = nil }),
		with("duration a number", func(r map[string]any) { spec(r)["duration"] = 12 }),
		with("duration garbage", func(r map[string]any) { spec(r)["duration"] = "soon" }),
		with("maxLatencyMs a string", func(r map[string]any) { spec(r)["maxLatencyMs"] = "fast" }),
		with("huge maxLatencyMs", func(r map[string]any) { spec(r)["maxLatencyMs"] = 1e300 }),
		with("operation unknown", func(r map[string]any) { r["operation"] = "EXPLODE" }),
		with("oldObject garbage", func(r map[string]any) { r["operation"] = "UPDATE"; r["oldObject"] = "x" }),
		deep(with("deep object", func(r map[string]any) { r["object"].(map[string]any)["metadata"] = "DEEP" })),
		{note: "text/plain", contentType: "text/plain", body: valid},
	}
}

// deep replaces the string "DEEP" in m's body by arrays nested 20,000
// deep (encoding/json will not write them).
func deep(m malformedBody) malformedBody {
	m.body = bytes.Replace(m.body, []byte(`"DEEP"`), []byte(strings.Repeat("[", 20000)+strings.Repeat("]", 20000)), 1)
	return m
}

// malformedOIP POSTs broken infer requests to carbonserve's REST port.
func malformedOIP(workers, rate int) func(context.Context, *target, *tally) {
	tensors := func(hist string) string {
		return `{"inputs":[` + hist + `,{"name":"start_unix","datatype":"INT64","shape":[1,1],"data":[1622505600]}]}`
	}
	hist := func(shape, datatype, data string) string {
		return tensors(`{"name":"history","datatype":"` + datatype + `","shape":` + shape + `,"data":` + data + `}`)
	}
	ones := "[" + strings.TrimSuffix(strings.Repeat("1,", 168), ",") + "]"
	bodies := []malformedBody{
		body("empty", ""),
		body("open brace", "{"),
		body("no inputs", `{"inputs":[]}`),
		body("inputs null", `{"inputs":null}`),
		body("inputs a string", `{"inputs":"x"}`),
		body("missing start", `{"inputs":[{"name":"history","datatype":"FP32","shape":[1,168],"data":`+ones+`}]}`),
		body("short data", hist("[1,168]", "FP32", "[1,2,3]")),
		body("negative shape", hist("[-1,168]", "FP32", ones)),
		body("huge shape", hist("[1000000000,168]", "FP32", ones)),
		body("overflowing shape", hist("[9223372036854775807,9223372036854775807]", "FP32", ones)),
		body("unknown datatype", hist("[1,168]", "FP128", ones)),
		body("strings as data", hist("[1,168]", "FP32", `["a","b"]`)),
		body("nested data", hist("[1,168]", "FP32", "[["+ones+"]]")),
		body("over max batch", hist("[1025,168]", "FP32", "["+strings.TrimSuffix(strings.Repeat("1,", 1025*168), ",")+"]")),
		body("unknown output", strings.TrimSuffix(hist("[1,168]", "FP32", ones), "}")+`,"outputs":[{"name":"nope"}]}`),
		body("deep nesting", strings.Repeat("[", 100000)),
		{note: "binary header too long", body: []byte(hist("[1,168]", "FP32", ones)), header: map[string]string{"Inference-Header-Content-Length": "99999999"}},
		{note: "binary header negative", body: []byte(hist("[1,168]", "FP32", ones)), header: map[string]string{"Inference-Header-Content-Length": "-5"}},
		{note: "binary header garbage", body: []byte(hist("[1,168]", "FP32", ones)), header: map[string]string{"Inference-Header-Content-Length": "ten"}},
		{note: "binary tensor short", header: map[string]string{"Inference-Header-Content-Length": "0"}, body: []byte(`{"inputs":[{"name":"history","datatype":"FP32","shape":[1,168],"parameters":{"binary_data_size":672}}]}`)},
	}
	return malformed(workers, rate, inferPath, bodies)
}

// rawCodec sends and receives gRPC messages as bytes, under the proto
// codec's name so that the server decodes them as protobuf.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// malformedGRPC sends ModelInfer messages that are not protobuf, cut
// short, or protobuf with impossible tensors; each must get a status
// saying so (InvalidArgument, or Internal for bytes that do not decode,
// which is grpc-go's answer to those) and nothing else.
func malformedGRPC(addr string, workers, rate int) func(context.Context, *target, *tally) {
	good := &inferencepb.ModelInferRequest{ModelName: inferModel, Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
		{Name: "history", Datatype: "FP32", Shape: []int64{1, 168}, Contents: &inferencepb.InferTensorContents{Fp32Contents: make([]float32, 168)}},
		{Name: "start_unix", Datatype: "INT64", Shape: []int64{1, 1}, Contents: &inferencepb.InferTensorContents{Int64Contents: []int64{1622505600}}},
	}}
	marshal := func(edit func(r *inferencepb.ModelInferRequest)) []byte {
		r := proto.Clone(good).(*inferencepb.ModelInferRequest)
		edit(r)
		b, err := proto.Marshal(r)
		if err != nil {
			panic(err)
		}
		return b
	}
	whole := marshal(func(*inferencepb.ModelInferRequest) {})
	type msg struct {
		note string
		b    []byte
		want []codes.Code
	}
	undecodable := []codes.Code{codes.Internal, codes.InvalidArgument}
	invalid := []codes.Code{codes.InvalidArgument}
	msgs := []msg{
		{"garbage", bytes.Repeat([]byte{0xff}, 100), undecodable},
		{"cut in half", whole[:len(whole)/2], undecodable},
		{"no inputs", marshal(func(r *inferencepb.ModelInferRequest) { r.Inputs = nil }), invalid},
		{"short contents", marshal(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Contents.Fp32Contents = []float32{1} }), invalid},
		{"huge shape", marshal(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Shape = []int64{1 << 40, 168} }), invalid},
		{"negative shape", marshal(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Shape = []int64{-1, 168} }), invalid},
		{"unknown datatype", marshal(func(r *inferencepb.ModelInferRequest) { r.Inputs[0].Datatype = "FP128" }), invalid},
		{"raw contents of the wrong size", marshal(func(r *inferencepb.ModelInferRequest) {
			r.Inputs[0].Contents = nil
			r.RawInputContents = [][]byte{{1, 2, 3}, {4}}
		}), invalid},
	}
	return func(ctx context.Context, tg *target, tl *tally) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
		if err != nil {
			tl.violation("gRPC client", err.Error())
			return
		}
		defer conn.Close()
		paced(ctx, workers, rate, func(ctx context.Context, i int) {
			m := msgs[i%len(msgs)]
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var out []byte
			err := conn.Invoke(cctx, inferencepb.GRPCInferenceService_ModelInfer_FullMethodName, m.b, &out)
			if ctx.Err() != nil {
				return
			}
			code := status.Code(err)
			for _, w := range m.want {
				if code == w {
					tl.add("answered " + code.String())
					return
				}
			}
			tl.violation(fmt.Sprintf("malformed gRPC message answered %v", code), fmt.Sprintf("%s: %v", m.note, err))
		})
	}
}
