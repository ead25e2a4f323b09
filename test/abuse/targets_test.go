package abuse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/test/services"
)

// maxConns is the gateway's --max-conns: small, so that the connection
// attacks reach it with a few hundred connections.
const maxConns = 256

// replayStart is the gateway's replay clock at start; the admission
// fixtures' deadlines are relative to it.
const replayStart = "2021-06-01T00:00:00Z"

// Paths attacked and requested.
const (
	schedulePath  = "/v1/schedule"
	admissionPath = "/v1/admission/mutate"
	registryPath  = "/api/2.0/mlflow/registered-models/search?max_results=5"
	registryWrite = "/api/2.0/mlflow/registered-models/create"
	inferModel    = "carbon-forecaster-DE"
	inferPath     = "/v2/models/" + inferModel + "/infer"
)

// scheduleBody is the request of `make run`'s example.
var scheduleBody = []byte(`{"zones":["DE","SE","PL","ES"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z"}`)

// lookback is the hours of history the trained models take per row.
const lookback = 168

// admissionFixture is the valid review the well-behaved client sends: a
// CREATE that gets scheduled, in both fail modes.
const admissionFixture = "create-scheduled-eu"

type gateway struct {
	proc     *services.Proc
	addr     string // 127.0.0.1:port
	failOpen bool
	review   []byte // the fixture's AdmissionReview
	uid      string // its request.uid
}

// startGateway runs carbongate as `make run` does (trained models, replay
// clock, embedded registry) plus the admission webhook over plain HTTP and
// --max-conns maxConns.
func startGateway(t *testing.T, failOpen bool) *gateway {
	t.Helper()
	review, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "test", "fixtures", "admission", admissionFixture, "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rv struct {
		Request struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	if err := json.Unmarshal(review, &rv); err != nil || rv.Request.UID == "" {
		t.Fatalf("fixture %s: no request.uid (%v)", admissionFixture, err)
	}
	g := &gateway{failOpen: failOpen, review: review, uid: rv.Request.UID}
	dir := t.TempDir()
	g.proc = services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(binDir, "carbongate"),
		ArgsFor: func() []string {
			g.addr = "127.0.0.1:" + strconv.Itoa(services.FreePort(t))
			args := []string{"--addr", g.addr, "--models", modelsDir, "--clock", "replay", "--replay-start", replayStart,
				"--drain-delay", "0s", "--access-log=false", "--log-level", "warn", "--max-conns", strconv.Itoa(maxConns),
				"--registry", filepath.Join(dir, "registry.db"), "--registry-cache-dir", filepath.Join(dir, "registry-models"),
				"--admission"}
			if failOpen {
				args = append(args, "--admission-fail-open")
			}
			return args
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady("http://" + g.addr + "/readyz")(ctx) },
	})
	return g
}

// target describes g to the attacks: its well-behaved lanes are
// scheduling, admission and registry requests, each over a keep-alive
// connection and over a fresh connection per request.
func (g *gateway) target(t *testing.T) *target {
	base := "http://" + g.addr
	tg := &target{name: "carbongate", proc: g.proc, addr: g.addr, metricsURL: base + "/metrics"}
	if g.failOpen {
		tg.name = "carbongate (admission fail-open)"
	}
	for _, mode := range []connMode{keepAlive, freshConn} {
		hc := mode.client()
		tg.clients = append(tg.clients, hc)
		tg.lanes = append(tg.lanes,
			lane{name: "schedule/" + mode.String(), do: func(ctx context.Context) error {
				return wantSchedule(post(ctx, hc, base+schedulePath, scheduleBody))
			}},
			lane{name: "admission/" + mode.String(), do: func(ctx context.Context) error {
				return g.wantReview(post(ctx, hc, base+admissionPath, g.review))
			}},
			lane{name: "registry/" + mode.String(), do: func(ctx context.Context) error {
				_, err := get(ctx, hc, base+registryPath)
				return err
			}})
	}
	return tg
}

// wantSchedule accepts a 200 with a decision.
func wantSchedule(body []byte, err error) error {
	if err != nil {
		return err
	}
	var r struct {
		Decision struct {
			Zone string `json:"zone"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Decision.Zone == "" {
		return fmt.Errorf("200 without a decision: %.200s", body)
	}
	return nil
}

// wantReview accepts a 200 AdmissionReview answering the fixture's uid
// that admits it (the fixture is admitted in both fail modes while
// scheduling works). A denial in a review is a failure too, but a
// different one from a bare error status: the messages tell them apart.
func (g *gateway) wantReview(body []byte, err error) error {
	if err != nil {
		var se *statusError
		if errors.As(err, &se) {
			return fmt.Errorf("bare %w, not an AdmissionReview", se)
		}
		return err
	}
	var rv struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Status  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"status"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &rv); err != nil || rv.Kind != "AdmissionReview" || rv.Response == nil || rv.Response.UID != g.uid {
		return fmt.Errorf("200 but not an AdmissionReview answering uid %s: %.200s", g.uid, body)
	}
	if !rv.Response.Allowed {
		if s := rv.Response.Status; s != nil {
			return fmt.Errorf("review denied %d: %s", s.Code, s.Message)
		}
		return errors.New("review denied without a status")
	}
	return nil
}

type server struct {
	proc      *services.Proc
	addr      string // REST 127.0.0.1:port
	grpcAddr  string
	inferBody []byte // a valid REST infer request, B=1
}

// startServe runs carbonserve over the same trained tree.
func startServe(t *testing.T) *server {
	t.Helper()
	s := &server{}
	s.proc = services.StartBinary(t, services.Binary{
		Name: "carbonserve", Path: filepath.Join(binDir, "carbonserve"),
		ArgsFor: func() []string {
			hp, gp := services.FreePort(t), services.FreePort(t)
			s.addr, s.grpcAddr = "127.0.0.1:"+strconv.Itoa(hp), "127.0.0.1:"+strconv.Itoa(gp)
			return []string{"--host", "127.0.0.1", "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp),
				"--models", modelsDir, "--reload-interval", "0", "--drain-delay", "0s", "--log-level", "warn"}
		},
		Ready: func(ctx context.Context) error {
			return services.OIPReady("http://"+s.addr, s.grpcAddr, inferModel)(ctx)
		},
	})
	h, st := servetest.InputL(1, lookback)
	body, err := json.Marshal(map[string]any{"inputs": []map[string]any{
		{"name": oip.InputHistory, "datatype": oip.FP32, "shape": []int{1, len(h)}, "data": h},
		{"name": oip.InputStart, "datatype": oip.INT64, "shape": []int{1, 1}, "data": st},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.inferBody = body
	return s
}

// target describes s to the attacks: its well-behaved lanes are infer
// requests through our REST client (keep-alive and fresh connections) and
// through our gRPC client.
func (s *server) target(t *testing.T) *target {
	tg := &target{name: "carbonserve", proc: s.proc, addr: s.addr, metricsURL: "http://" + s.addr + "/metrics"}
	req := inferRequest()
	for _, mode := range []connMode{keepAlive, freshConn} {
		hc := mode.client()
		tg.clients = append(tg.clients, hc)
		c, err := rest.NewClient("http://"+s.addr, rest.WithTransport(hc.Transport), rest.WithTimeout(requestTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		tg.lanes = append(tg.lanes, lane{name: "infer-rest/" + mode.String(), do: func(ctx context.Context) error {
			return wantForecast(c.Infer(ctx, inferModel, "", req))
		}})
	}
	gc, err := oipgrpc.NewClient(s.grpcAddr, oipgrpc.WithTimeout(requestTimeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gc.Close() })
	tg.lanes = append(tg.lanes, lane{name: "infer-grpc", do: func(ctx context.Context) error {
		return wantForecast(gc.Infer(ctx, inferModel, "", req))
	}})
	return tg
}

func inferRequest() *oip.InferenceRequest {
	h, st := servetest.InputL(1, lookback)
	return &oip.InferenceRequest{ID: "abuse", Inputs: []oip.Tensor{
		{Name: oip.InputHistory, Datatype: oip.FP32, Shape: []int64{1, int64(len(h))}, FP32: h},
		{Name: oip.InputStart, Datatype: oip.INT64, Shape: []int64{1, 1}, INT64: st},
	}}
}

// wantForecast accepts an answer with the forecast output.
func wantForecast(resp *oip.InferenceResponse, err error) error {
	if err != nil {
		return err
	}
	for _, o := range resp.Outputs {
		if o.Name == oip.OutputForecast && len(o.FP32) > 0 {
			return nil
		}
	}
	return fmt.Errorf("no %s output in %+v", oip.OutputForecast, resp.Outputs)
}

// connMode is how a well-behaved lane connects. A keep-alive connection
// measures what an established client (a load balancer, OPA's pool) sees;
// a fresh connection per request measures what a new client sees, which is
// the honest measure under connection attacks.
type connMode int

const (
	keepAlive connMode = iota
	freshConn
)

func (m connMode) String() string { return [...]string{"keepalive", "fresh"}[m] }

func (m connMode) client() *http.Client {
	return &http.Client{Timeout: requestTimeout, Transport: &http.Transport{
		Proxy: nil, DisableKeepAlives: m == freshConn, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
	}}
}

// requestTimeout bounds a well-behaved request: above the gateway's 4 s
// request timeout, so a request the server held that long is seen as slow,
// not lost.
const requestTimeout = 6 * time.Second

// statusError is an answer with an unexpected status.
type statusError struct {
	code int
	body []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("status %d: %.200s", e.code, bytes.TrimSpace(e.body))
}

func post(ctx context.Context, hc *http.Client, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(hc, req)
}

func get(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return do(hc, req)
}

// do returns the body of a 200 answer.
func do(hc *http.Client, req *http.Request) ([]byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{resp.StatusCode, b}
	}
	return b, nil
}
