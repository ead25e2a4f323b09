package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// DefaultMaxBodyBytes is the default ceiling on an infer request body. A
// Backend that implements oip.Limiter gets a tighter limit per model (see
// Handler).
const DefaultMaxBodyBytes = 64 << 20

// HandlerOption configures NewHandler.
type HandlerOption func(*Handler)

// WithMaxBodyBytes limits infer request bodies to n bytes (default
// DefaultMaxBodyBytes); larger bodies are answered 413. With an
// oip.Limiter Backend this is a ceiling over the per-model limit.
func WithMaxBodyBytes(n int64) HandlerOption {
	return func(h *Handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithGate bounds the infer requests in flight to g's slots (default: no
// bound). A request takes a slot once its body has been read (a client
// that sends slowly holds no slot others need); one that finds them all
// taken is answered at once 503 with Retry-After, before its data is
// decoded. Share g with the server's other transports to bound their sum.
// Health, readiness and metadata routes are never limited: probes must
// answer under overload.
func WithGate(g *oip.Gate) HandlerOption {
	return func(h *Handler) { h.gate = g }
}

// WithBodyBudget bounds the bytes of infer bodies being read and served
// beyond each one's free part (see oip.BodyBudget); a body that finds it
// spent is answered 503 with Retry-After. Default: no bound but the
// per-request limits.
func WithBodyBudget(b *oip.BodyBudget) HandlerOption {
	return func(h *Handler) { h.budget = b }
}

// WithLogger sets where internal errors are logged (default: discarded).
func WithLogger(l *slog.Logger) HandlerOption {
	return func(h *Handler) {
		if l != nil {
			h.log = l
		}
	}
}

// Handler serves a Backend over the OIP REST protocol:
//
//	GET  /v2/health/live, /v2/health/ready        200, or 503 {"error"}
//	GET  /v2                                      server metadata
//	GET  /v2/models/{m}[/versions/{v}]            model metadata
//	GET  /v2/models/{m}[/versions/{v}]/ready      200, 503 not ready, 404 unknown
//	POST /v2/models/{m}[/versions/{v}]/infer      JSON or binary tensor extension
//
// Errors are non-2xx with {"error": "..."}: EINVALID 400, ENOTFOUND 404,
// EUNAVAILABLE 503 (with Retry-After when shed for overload, see WithGate),
// a body over the limit 413, a wrong method 405, anything else 500 with a
// generic message (the cause is logged).
//
// Infer requests are bounded before their data is decoded. When the Backend
// implements oip.Limiter, its limits for the model size the body: the
// JSON bound (oip.Limits.MaxJSONBytes), or for the binary tensor extension
// the exact binary bound (MaxBinaryBytes). A Content-Length above it is
// answered 413 without reading the body; a body without one is read through
// http.MaxBytesReader up to it. An unknown or loading model is answered
// 404 or 503 before the body is read, and the inputs' names, datatypes and
// shapes are checked against the limits (oip.Limits.Check) before any
// tensor data is decoded or allocated. When the Backend implements
// oip.Observer, every infer request answered without calling Infer is
// reported to it.
type Handler struct {
	b       oip.Backend
	limiter oip.Limiter     // nil: maxBody only
	obs     oip.Observer    // nil: not reported
	gate    *oip.Gate       // nil: no bound
	budget  *oip.BodyBudget // nil: no bound
	maxBody int64
	log     *slog.Logger
	mux     *http.ServeMux
	bufs    sync.Pool
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a Handler serving b.
func NewHandler(b oip.Backend, opts ...HandlerOption) *Handler {
	h := &Handler{
		b:       b,
		maxBody: DefaultMaxBodyBytes,
		log:     slog.New(slog.DiscardHandler),
		mux:     http.NewServeMux(),
	}
	h.limiter, _ = b.(oip.Limiter)
	h.obs, _ = b.(oip.Observer)
	h.bufs.New = func() any { return new(bytes.Buffer) }
	for _, o := range opts {
		o(h)
	}
	h.route("GET /v2/health/live", h.live)
	h.route("GET /v2/health/ready", h.ready)
	h.route("GET /v2", h.serverMetadata)
	h.route("GET /v2/models/{model}", h.modelMetadata)
	h.route("GET /v2/models/{model}/versions/{version}", h.modelMetadata)
	h.route("GET /v2/models/{model}/ready", h.modelReady)
	h.route("GET /v2/models/{model}/versions/{version}/ready", h.modelReady)
	h.route("POST /v2/models/{model}/infer", h.infer)
	h.route("POST /v2/models/{model}/versions/{version}/infer", h.infer)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, forecast.Errorf(forecast.ENOTFOUND, "no route %s %s", r.Method, r.URL.Path))
	})
	return h
}

// route registers fn for pattern and a JSON 405 for the path's other methods.
func (h *Handler) route(pattern string, fn func(http.ResponseWriter, *http.Request) error) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
	method, path, _ := cutSpace(pattern)
	h.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", method)
		writeJSON(w, http.StatusMethodNotAllowed, wireError{Error: "method " + r.Method + " not allowed"})
	})
}

func cutSpace(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// errTooLarge marks a body over the limit; errBodyTimeout a body still
// arriving at the read deadline (408).
var (
	errTooLarge    = errors.New("request body too large")
	errBodyTimeout = errors.New("request body timed out")
)

// tooLarge is the EINVALID error of a body over limit bytes, answered 413.
func tooLarge(limit int64, model string) error {
	return &forecast.Error{Code: forecast.EINVALID, Err: errTooLarge,
		Message: "request body larger than " + strconv.FormatInt(limit, 10) + " bytes, the most an infer request of model " + strconv.Quote(model) + " can take"}
}

// statusOf is the one table from error codes to HTTP statuses.
func statusOf(err error) int {
	if errors.Is(err, errTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	if errors.Is(err, errBodyTimeout) {
		return http.StatusRequestTimeout
	}
	switch forecast.ErrorCode(err) {
	case forecast.EINVALID:
		return http.StatusBadRequest
	case forecast.ENOTFOUND:
		return http.StatusNotFound
	case forecast.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg := forecast.ErrorMessage(err)
	switch {
	case errors.Is(err, oip.ErrOverloaded):
		w.Header().Set("Retry-After", strconv.Itoa(oip.RetryAfterSeconds))
	case status == http.StatusServiceUnavailable && forecast.ErrorCode(err) != forecast.EUNAVAILABLE:
		msg = "deadline exceeded"
	case status == http.StatusInternalServerError:
		msg = "internal error"
		h.log.ErrorContext(r.Context(), "oip rest: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, wireError{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (h *Handler) live(w http.ResponseWriter, r *http.Request) error {
	ok, err := h.b.ServerLive(r.Context())
	if err != nil {
		return err
	}
	if !ok {
		return forecast.Errorf(forecast.EUNAVAILABLE, "server not live")
	}
	writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	return nil
}

func (h *Handler) ready(w http.ResponseWriter, r *http.Request) error {
	ok, err := h.b.ServerReady(r.Context())
	if err != nil {
		return err
	}
	if !ok {
		return forecast.Errorf(forecast.EUNAVAILABLE, "server not ready")
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ready": true})
	return nil
}

func (h *Handler) serverMetadata(w http.ResponseWriter, r *http.Request) error {
	md, err := h.b.ServerMetadata(r.Context())
	if err != nil {
		return err
	}
	ext := md.Extensions
	if ext == nil {
		ext = []string{}
	}
	writeJSON(w, http.StatusOK, wireServerMeta{Name: md.Name, Version: md.Version, Extensions: ext})
	return nil
}

func (h *Handler) modelMetadata(w http.ResponseWriter, r *http.Request) error {
	md, err := h.b.ModelMetadata(r.Context(), r.PathValue("model"), r.PathValue("version"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, metaToWire(md))
	return nil
}

func (h *Handler) modelReady(w http.ResponseWriter, r *http.Request) error {
	m, v := r.PathValue("model"), r.PathValue("version")
	ok, err := h.b.ModelReady(r.Context(), m, v)
	if err != nil {
		return err
	}
	if !ok {
		return forecast.Errorf(forecast.EUNAVAILABLE, "model %q not ready", m)
	}
	writeJSON(w, http.StatusOK, struct {
		Name  string `json:"name"`
		Ready bool   `json:"ready"`
	}{m, true})
	return nil
}

func (h *Handler) infer(w http.ResponseWriter, r *http.Request) error {
	m, v := r.PathValue("model"), r.PathValue("version")
	buf := h.bufs.Get().(*bytes.Buffer)
	defer h.putBuf(buf)
	buf.Reset()
	body, check, held, err := h.readBody(w, r, m, v, buf)
	defer h.giveBack(held)
	if err != nil {
		return h.rejected(m, err)
	}
	if h.gate != nil {
		if !h.gate.TryEnter() {
			return h.rejected(m, h.gate.Overloaded())
		}
		defer h.gate.Leave()
	}
	req, err := decodeRequest(body, r.Header.Get(HeaderInferenceLength), check)
	if err == nil {
		err = req.Validate()
	}
	if err != nil {
		return h.rejected(m, err)
	}
	resp, err := h.b.Infer(r.Context(), m, v, req)
	if err != nil {
		return err
	}
	if resp == nil {
		return errors.New("backend returned no response")
	}
	if resp.ID == "" {
		resp.ID = req.ID
	}
	if resp.ModelName == "" {
		resp.ModelName = m
	}
	if resp.ModelVersion == "" {
		resp.ModelVersion = v
	}
	if len(req.Outputs) > 0 {
		if resp, err = selectOutputs(resp, req.Outputs); err != nil {
			return err
		}
	}
	if err := resp.Validate(); err != nil {
		return forecast.Errorf(forecast.EINTERNAL, "backend response for model %q: %v", m, err)
	}
	buf.Reset()
	out, jsonLen, err := encodeResponse(buf.AvailableBuffer(), resp, binaryOutputs(req))
	if err != nil {
		return forecast.Errorf(forecast.EINTERNAL, "encoding response of model %q: %v", m, err)
	}
	hd := w.Header()
	if jsonLen >= 0 {
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set(HeaderInferenceLength, strconv.Itoa(jsonLen))
	} else {
		hd.Set("Content-Type", "application/json")
	}
	hd.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	if cap(out) > buf.Cap() {
		// Keep the grown buffer for the next request.
		*buf = *bytes.NewBuffer(out[:0])
	}
	return nil
}

// rejected reports err, the answer to an infer request of model that did
// not reach Infer, to the Observer, and returns it.
func (h *Handler) rejected(model string, err error) error {
	if h.obs != nil {
		h.obs.InferRejected(model, err)
	}
	return err
}

// readBody reads the body of an infer request of model m, version v, into
// buf within the model's limits (see Handler) and the body budget; it
// returns the body, the model's shape check and the budget bytes held,
// which the caller gives back once done with the body.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, m, v string, buf *bytes.Buffer) (body []byte, check func([]oip.Tensor) error, held int64, err error) {
	limit := h.maxBody
	if h.limiter != nil {
		lim, err := h.limiter.InferLimits(r.Context(), m, v)
		if err != nil {
			return nil, nil, 0, err
		}
		limit, check = min(limit, bodyLimit(lim, r.Header.Get(HeaderInferenceLength) != "")), lim.Check
	}
	if r.ContentLength > limit {
		return nil, nil, 0, tooLarge(limit, m)
	}
	body, held, err = oip.ReadBody(r.Body, r.ContentLength, limit, h.budget, buf.AvailableBuffer())
	*buf = *bytes.NewBuffer(body) // keep a grown buffer for the response
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return body, check, held, nil
	case errors.As(err, &mbe):
		return nil, nil, held, tooLarge(limit, m)
	case errors.Is(err, oip.ErrBodyBudget):
		return nil, nil, held, oip.Overloaded(h.budget.Size(), "bytes of request bodies being read")
	case oip.LateBody(w, err):
		return nil, nil, held, &forecast.Error{Code: forecast.EINVALID, Err: errBodyTimeout,
			Message: "the request body did not arrive in time: " + strconv.Itoa(len(body)) + " of " + strconv.FormatInt(r.ContentLength, 10) + " bytes"}
	}
	w.Header().Set("Connection", "close")
	return nil, nil, held, forecast.Errorf(forecast.EINVALID, "reading request body: %v", err)
}

// giveBack returns budget bytes held by a body.
func (h *Handler) giveBack(held int64) {
	if h.budget != nil {
		h.budget.Give(held)
	}
}

// bodyLimit is the largest body lim allows: JSON, or with the binary
// tensor extension (a body with an Inference-Header-Content-Length) the
// exact binary sizes. A client may send some inputs in JSON next to binary
// ones; their JSON must then fit in the binary bound, which for FP32 at 4
// bytes a value it rarely does: send all inputs in binary.
func bodyLimit(lim oip.Limits, binary bool) int64 {
	if binary {
		return lim.MaxBinaryBytes()
	}
	return lim.MaxJSONBytes()
}

// maxPooledBuf caps the buffers kept for the next request: a larger one,
// grown by a large request, is left to the collector, so that a burst of
// large requests does not pin their memory.
const maxPooledBuf = 1 << 20

func (h *Handler) putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuf {
		h.bufs.Put(b)
	}
}

// selectOutputs keeps the requested outputs, in request order.
func selectOutputs(resp *oip.InferenceResponse, want []oip.RequestedOutput) (*oip.InferenceResponse, error) {
	outs := make([]oip.Tensor, 0, len(want))
	for _, o := range want {
		t := resp.Output(o.Name)
		if t == nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, o.Name, "model %q has no output %q", resp.ModelName, o.Name)
		}
		outs = append(outs, *t)
	}
	cp := *resp
	cp.Outputs = outs
	return &cp, nil
}

// binaryOutputs returns which outputs the request wants in binary: an
// output-level binary_data wins over the request-level binary_data_output.
func binaryOutputs(req *oip.InferenceRequest) func(string) bool {
	all, _ := paramBool(req.Parameters, ParamBinaryOutput)
	per := false
	for _, o := range req.Outputs {
		if _, ok := paramBool(o.Parameters, ParamBinaryData); ok {
			per = true
			break
		}
	}
	if !all && !per {
		return nil
	}
	return func(name string) bool {
		for _, o := range req.Outputs {
			if o.Name == name {
				if v, ok := paramBool(o.Parameters, ParamBinaryData); ok {
					return v
				}
			}
		}
		return all
	}
}
