package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/oip/rest"
)

// TestOverloadSheds: requests whose bodies are still arriving hold no
// slot of --max-inflight 2 (they used to hold both, and every other
// client got 503); with both slots taken, further infer calls are answered
// at once, REST 503 with Retry-After and an OIP error body, gRPC
// Unavailable, and counted; health and metadata still answer; once the
// slots are free, a well-behaved client gets its answers.
func TestOverloadSheds(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "DE")
	servetest.Save(t, dir, servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0))
	m, _ := startMain(t, noEnv, "--model_dir", dir, "--max-inflight", "2")
	url := "http://" + m.HTTPAddr()
	infer := url + "/v2/models/carbon-forecaster-DE/infer"
	body := inferBody(t)

	type slow struct {
		w    *io.PipeWriter
		done chan int
	}
	var held []slow
	for range 3 {
		pr, pw := io.Pipe()
		s := slow{pw, make(chan int, 1)}
		go func() { s.done <- post(t, infer, pr, int64(len(body))) }()
		if _, err := pw.Write(body[:10]); err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	if got := post(t, infer, bytes.NewReader(body), int64(len(body))); got != http.StatusOK {
		t.Fatalf("infer while 3 bodies arrive slowly: %d, want 200 (slow bodies hold no slot)", got)
	}
	for _, s := range held {
		if _, err := s.w.Write(body[10:]); err != nil {
			t.Fatal(err)
		}
		s.w.Close()
		if got := <-s.done; got != http.StatusOK {
			t.Errorf("slow request: status %d, want 200", got)
		}
	}

	// Both slots taken, as by two requests being served.
	for range 2 {
		if !m.gate.TryEnter() {
			t.Fatal("no free slot")
		}
	}
	waitMetric(t, url, "carbonserve_infer_inflight 2")
	resp, err := http.Post(infer, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	derr := json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || derr != nil || !strings.Contains(e.Error, "overloaded") {
		t.Fatalf("REST over the limit: %d, Retry-After %q, error %q (%v)", resp.StatusCode, resp.Header.Get("Retry-After"), e.Error, derr)
	}
	cs := clients(t, m)
	req, _, _ := forecastRequest(1)
	ctx := context.Background()
	if _, err := cs["grpc"].Infer(ctx, "carbon-forecaster-DE", "", req); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("gRPC over the limit: %v", err)
	}
	for proto, c := range cs {
		if err := c.ServerReady(ctx); err != nil {
			t.Errorf("%s ready under overload: %v", proto, err)
		}
		if _, err := c.ModelMetadata(ctx, "carbon-forecaster-DE", ""); err != nil {
			t.Errorf("%s metadata under overload: %v", proto, err)
		}
	}

	m.gate.Leave()
	m.gate.Leave()
	for proto, c := range cs {
		if _, err := c.Infer(ctx, "carbon-forecaster-DE", "", req); err != nil {
			t.Errorf("%s after the overload: %v", proto, err)
		}
	}
	waitMetric(t, url, `carbonserve_infer_requests_total{model="carbon-forecaster-DE",status="unavailable"} 2`)
}

// TestEveryRESTAnswerCounted sends requests that REST rejects before the
// model sees them (malformed JSON, a JSON type mismatch, shape/data
// mismatch, a bad binary header, a shape beyond the contract, a body over
// the limit): each is answered with a message in protocol terms (no Go type
// or struct names) and counted in carbonserve_infer_requests_total.
func TestEveryRESTAnswerCounted(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "DE")
	servetest.Save(t, dir, servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0))
	m, _ := startMain(t, noEnv, "--model_dir", dir, "--max-batch", "4")
	url := "http://" + m.HTTPAddr()
	infer := url + "/v2/models/carbon-forecaster-DE/infer"
	hist := func(shape, data string) string {
		return `{"inputs":[{"name":"history","datatype":"FP32","shape":` + shape + `,"data":` + data + `},` +
			`{"name":"start_unix","datatype":"INT64","shape":[1,1],"data":[1622505600]}]}`
	}
	for _, tc := range []struct {
		name, body, header string
		status             int
		want               string // in the error message
	}{
		{"malformed JSON", `{"inputs":[`, "", 400, "malformed JSON request"},
		{"type mismatch", `{"inputs":[{"name":"history","datatype":"FP32","shape":"48"}]}`, "", 400, `field "inputs.shape" must be an array, got string`},
		{"number for an integer", `{"inputs":[{"name":"history","datatype":"FP32","shape":[1.5,48]}]}`, "", 400, `field "inputs.shape" must be an integer in range, got number 1.5`},
		{"shape/data mismatch", hist("[1,48]", "[1,2,3]"), "", 400, "holds 48 elements, data has 3"},
		{"binary header", hist("[1,48]", "[1]"), "abc", 400, "Inference-Header-Content-Length"},
		{"batch above --max-batch", hist("[5,48]", "[1]"), "", 400, "batch size 5 is above this server's maximum 4"},
		{"body over the limit", hist("[1,48]", "["+strings.Repeat("1,", 200<<10)+"1]"), "", 413, "request body larger than"},
	} {
		req, _ := http.NewRequest(http.MethodPost, infer, strings.NewReader(tc.body))
		if tc.header != "" {
			req.Header.Set(rest.HeaderInferenceLength, tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		derr := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != tc.status || derr != nil || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: %d %q (%v), want %d with %q", tc.name, resp.StatusCode, e.Error, derr, tc.status, tc.want)
		}
		for _, goName := range []string{"Go struct", "wire", "int64", "[]", "rest."} {
			if strings.Contains(e.Error, goName) {
				t.Errorf("%s: message %q names Go types (%q)", tc.name, e.Error, goName)
			}
		}
	}
	waitMetric(t, url, `carbonserve_infer_requests_total{model="carbon-forecaster-DE",status="invalid"} 7`)
}

// post sends body (of length n, -1 to send it chunked) and returns the
// status, or 0 when the exchange failed.
func post(t *testing.T, url string, body io.Reader, n int64) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		t.Error(err)
		return 0
	}
	req.ContentLength = n
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Logf("POST: %v", err)
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// inferBody is a valid JSON infer request of one row for servetest's shape.
func inferBody(t *testing.T) []byte {
	t.Helper()
	h, st := servetest.Input(1)
	b, err := json.Marshal(map[string]any{"inputs": []map[string]any{
		{"name": oip.InputHistory, "datatype": "FP32", "shape": []int{1, servetest.Lookback}, "data": h},
		{"name": oip.InputStart, "datatype": "INT64", "shape": []int{1, 1}, "data": st},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitMetric waits up to 5 s for a line of /metrics.
func waitMetric(t *testing.T, url, line string) {
	t.Helper()
	var body string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if body = httpGet(t, url+"/metrics"); strings.Contains(body, line+"\n") {
			return
		}
	}
	t.Fatalf("/metrics lacks %q:\n%s", line, grepLines(body, "carbonserve_infer"))
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}
