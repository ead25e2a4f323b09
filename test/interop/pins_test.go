//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// pin is one observed answer of a peer to a raw REST request: what FACTS.md
// ("Open Inference Protocol") says servers disagree on, asserted exactly so
// a peer upgrade that changes it shows up here first.
type pin struct {
	note   string
	method string
	path   string // {m} is the model name
	body   string
	status int
	// want is the exact body ("" = empty body) unless contains is set,
	// then a substring of it.
	want     string
	contains bool
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp.StatusCode, string(b)
}

func checkPins(t *testing.T, srv *services.OIPServer, pins []pin) {
	t.Helper()
	for _, p := range pins {
		path := strings.ReplaceAll(p.path, "{m}", srv.Model)
		body := strings.ReplaceAll(p.body, "{m}", srv.Model)
		want := strings.ReplaceAll(p.want, "{m}", srv.Model)
		status, got := do(t, p.method, srv.RESTURL+path, body)
		ok := status == p.status && (got == want || (p.contains && strings.Contains(got, want)))
		if !ok {
			t.Errorf("%s: %s %s = %d %q, want %d %q (contains=%v)", p.note, p.method, path, status, got, p.status, want, p.contains)
		}
	}
}

// inferBody is a JSON infer request for a [1, l] history.
func inferBody(l int, histType string) string {
	data := make([]float32, l)
	b, _ := json.Marshal(map[string]any{
		"id": "pin",
		"inputs": []any{
			map[string]any{"name": "history", "shape": []int{1, l}, "datatype": histType, "data": data},
			map[string]any{"name": "start_unix", "shape": []int{1, 1}, "datatype": "INT64", "data": []int64{1622505600}},
		},
	})
	return string(b)
}

// binaryBody is an infer request in the binary tensor extension: the JSON
// header declares binary_data_size per input, the raw tensors follow.
func binaryBody() (body []byte, jsonLen int) {
	hdr, _ := json.Marshal(map[string]any{
		"inputs": []any{
			map[string]any{"name": "history", "shape": []int{1, lookback}, "datatype": "FP32", "parameters": map[string]any{"binary_data_size": 4 * lookback}},
			map[string]any{"name": "start_unix", "shape": []int{1, 1}, "datatype": "INT64", "parameters": map[string]any{"binary_data_size": 8}},
		},
		"parameters": map[string]any{"binary_data_output": true},
	})
	var buf bytes.Buffer
	buf.Write(hdr)
	buf.Write(make([]byte, 4*lookback))                          // zeros
	buf.Write(binary.LittleEndian.AppendUint64(nil, 1622505600)) // 2021-06-01T00:00Z
	return buf.Bytes(), len(hdr)
}

// testRESTPins pins each peer's REST behaviour with the model ready.
func testRESTPins(t *testing.T, peer string, srv *services.OIPServer) {
	common := []pin{
		{note: "infer with a [1,168] history works", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(lookback, "FP32"),
			status: 200, want: `"name":"forecast","shape":[1,96],"datatype":"FP32"`, contains: true},
	}
	var pins []pin
	switch peer {
	case "kserve":
		pins = []pin{
			// KServe answers health with a JSON body; MLServer with none.
			{note: "KServe live body", method: "GET", path: "/v2/health/live", status: 200, want: `{"live":true}`},
			{note: "KServe ready body", method: "GET", path: "/v2/health/ready", status: 200, want: `{"ready":true}`},
			{note: "KServe model ready body", method: "GET", path: "/v2/models/{m}/ready", status: 200, want: `{"name":"{m}","ready":true}`},
			// KServe sends "versions": null and platform "" for a Python model.
			{note: "KServe metadata: versions null", method: "GET", path: "/v2/models/{m}", status: 200,
				want: `{"name":"{m}","versions":null,"platform":"","inputs":[{"name":"history","datatype":"FP32","shape":[-1,168]},{"name":"start_unix","datatype":"INT64","shape":[-1,1]}],"outputs":[{"name":"forecast","datatype":"FP32","shape":[-1,96]}]}`},
			// KServe has no model versioning: every /versions/ route is 501.
			{note: "KServe /versions/ metadata is 501", method: "GET", path: "/v2/models/{m}/versions/1", status: 501, want: `{"error":"Model versioning not supported yet."}`},
			{note: "KServe /versions/ ready is 501", method: "GET", path: "/v2/models/{m}/versions/1/ready", status: 501, want: `{"error":"Model versioning not supported yet."}`},
			{note: "KServe /versions/ infer is 501", method: "POST", path: "/v2/models/{m}/versions/1/infer", body: inferBody(lookback, "FP32"), status: 501, want: `{"error":"Model versioning not supported yet."}`},
			// Unknown model: 404 with KServe's wording.
			{note: "KServe unknown model metadata", method: "GET", path: "/v2/models/nope", status: 404, want: `{"error":"Model with name nope does not exist."}`},
			{note: "KServe unknown model ready", method: "GET", path: "/v2/models/nope/ready", status: 404, want: `{"error":"Model with name nope does not exist."}`},
			{note: "KServe unknown model infer", method: "POST", path: "/v2/models/nope/infer", body: inferBody(lookback, "FP32"), status: 404, want: `{"error":"Model with name nope does not exist."}`},
			// A model's kserve.errors.InvalidInput is 400 {"error": ...}.
			{note: "KServe bad shape is 400", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(100, "FP32"), status: 400,
				want: `{"error":"input 'history' has shape [1, 100], want [B, 168]"}`},
			// KServe echoes "model_version": null and "parameters": null.
			{note: "KServe infer response nulls", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(lookback, "FP32"), status: 200,
				want: `{"model_name":"{m}","model_version":null,"id":"pin","parameters":null,"outputs":[{"name":"forecast","shape":[1,96],"datatype":"FP32","parameters":null,"data":[`, contains: true},
		}
	case "mlserver":
		pins = []pin{
			// MLServer answers health with 200 and an empty body.
			{note: "MLServer live body", method: "GET", path: "/v2/health/live", status: 200, want: ``},
			{note: "MLServer ready body", method: "GET", path: "/v2/health/ready", status: 200, want: ``},
			{note: "MLServer model ready body", method: "GET", path: "/v2/models/{m}/ready", status: 200, want: ``},
			// MLServer sends "versions": [] and "parameters": {}.
			{note: "MLServer metadata: versions []", method: "GET", path: "/v2/models/{m}", status: 200,
				want: `{"name":"{m}","versions":[],"platform":"carbongate-seasonal-naive","inputs":[{"name":"history","datatype":"FP32","shape":[-1,168]},{"name":"start_unix","datatype":"INT64","shape":[-1,1]}],"outputs":[{"name":"forecast","datatype":"FP32","shape":[-1,96]}],"parameters":{}}`},
			// MLServer implements /versions/: an unknown version is a 404.
			{note: "MLServer unknown version is 404", method: "GET", path: "/v2/models/{m}/versions/1", status: 404, want: `{"error":"Model {m} with version 1 not found"}`},
			{note: "MLServer unknown version ready is 404", method: "GET", path: "/v2/models/{m}/versions/1/ready", status: 404, want: `{"error":"Model {m} with version 1 not found"}`},
			// Unknown model: 404 with MLServer's wording.
			{note: "MLServer unknown model metadata", method: "GET", path: "/v2/models/nope", status: 404, want: `{"error":"Model nope not found"}`},
			{note: "MLServer unknown model ready", method: "GET", path: "/v2/models/nope/ready", status: 404, want: `{"error":"Model nope not found"}`},
			{note: "MLServer unknown model infer", method: "POST", path: "/v2/models/nope/infer", body: inferBody(lookback, "FP32"), status: 404, want: `{"error":"Model nope not found"}`},
			// A runtime's mlserver.errors.InferenceError is 400 {"error": ...}.
			{note: "MLServer bad shape is 400", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(100, "FP32"), status: 400,
				want: `{"error":"input 'history' has shape [1, 100], want [B, 168]"}`},
			// MLServer omits model_version when the model has none, sends
			// "parameters": {} and tags outputs with their content type.
			{note: "MLServer infer response", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(lookback, "FP32"), status: 200,
				want: `{"model_name":"{m}","id":"pin","parameters":{},"outputs":[{"name":"forecast","shape":[1,96],"datatype":"FP32","parameters":{"content_type":"np"},"data":[`, contains: true},
		}
	}
	checkPins(t, srv, append(common, pins...))
	t.Run("binary-extension", func(t *testing.T) { testBinaryPin(t, peer, srv) })
}

// testBinaryPin sends a raw binary-extension request.
func testBinaryPin(t *testing.T, peer string, srv *services.OIPServer) {
	body, jsonLen := binaryBody()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.RESTURL+"/v2/models/"+srv.Model+"/infer", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Inference-Header-Content-Length", strconv.Itoa(jsonLen))
	hc := http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	hl := resp.Header.Get("Inference-Header-Content-Length")
	switch peer {
	case "kserve":
		// KServe implements the extension: 200, a JSON header of the
		// announced length, then 96 FP32 zeros.
		if resp.StatusCode != 200 || hl == "" {
			t.Fatalf("KServe binary infer: %d (Inference-Header-Content-Length %q) %q", resp.StatusCode, hl, b)
		}
		n, err := strconv.Atoi(hl)
		if err != nil {
			t.Fatalf("KServe binary infer: Inference-Header-Content-Length %q: %v", hl, err)
		}
		if got, want := len(b)-n, 4*horizon; got != want {
			t.Fatalf("KServe binary infer: %d raw bytes after the header, want %d", got, want)
		}
	case "mlserver":
		// MLServer 1.7.1 does not implement the extension: it fails the
		// request with a bare 500 "Internal Server Error" (not JSON).
		if resp.StatusCode != 500 || string(b) != "Internal Server Error" {
			t.Fatalf("MLServer binary infer: %d %q, want 500 \"Internal Server Error\"", resp.StatusCode, truncate(string(b), 300))
		}
	}
}

// testNotReadyPins pins the peers' answers while the model is loading.
func testNotReadyPins(t *testing.T, peer string, srv *services.OIPServer) {
	var pins []pin
	switch peer {
	case "kserve":
		pins = []pin{
			// KServe's server readiness ignores the model's (no predictor
			// host): 200 while the model is not ready.
			{note: "KServe server ready while the model is not", method: "GET", path: "/v2/health/ready", status: 200, want: `{"ready":true}`},
			// A not-ready model is 503 with an error body, on ready and infer.
			{note: "KServe model not ready is 503", method: "GET", path: "/v2/models/{m}/ready", status: 503, want: `{"error":"Model with name {m} is not ready."}`},
			{note: "KServe infer on a not-ready model is 503", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(lookback, "FP32"), status: 503, want: `{"error":"Model with name {m} is not ready."}`},
			// Metadata is served while the model is not ready.
			{note: "KServe metadata while not ready", method: "GET", path: "/v2/models/{m}", status: 200, want: `"name":"{m}"`, contains: true},
		}
	case "mlserver":
		pins = []pin{
			// MLServer's server readiness is every model's: 400 (not 503),
			// empty body, while a model is loading.
			{note: "MLServer server not ready is 400, empty", method: "GET", path: "/v2/health/ready", status: 400, want: ``},
			// A loading model is 400 (not 503): empty on ready, an error
			// body on infer.
			{note: "MLServer model not ready is 400, empty", method: "GET", path: "/v2/models/{m}/ready", status: 400, want: ``},
			{note: "MLServer infer on a loading model is 400", method: "POST", path: "/v2/models/{m}/infer", body: inferBody(lookback, "FP32"), status: 400, want: `{"error":"Model {m} is not ready yet."}`},
			// Metadata is served while the model loads.
			{note: "MLServer metadata while loading", method: "GET", path: "/v2/models/{m}", status: 200, want: `"name":"{m}"`, contains: true},
		}
	}
	checkPins(t, srv, pins)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
