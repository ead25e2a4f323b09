package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// DefaultMaxResponseBytes limits the body of a response.
const DefaultMaxResponseBytes = 64 << 20

// ClientOption configures NewClient.
type ClientOption func(*Client)

// WithTimeout sets the timeout applied to calls whose context has no
// deadline (default DefaultTimeout). A context deadline always wins.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithHost sends every request with this Host header, so an ingress
// routes it (KServe: the InferenceService host) while the TCP connection
// goes to baseURL.
func WithHost(host string) ClientOption { return func(c *Client) { c.host = host } }

// WithBinaryInputs sends numeric inputs (every datatype but BOOL and BYTES)
// with the binary tensor data extension instead of JSON.
func WithBinaryInputs(on bool) ClientOption { return func(c *Client) { c.binIn = on } }

// WithBinaryOutputs asks the server for every output in binary (request
// parameter binary_data_output). Responses are decoded whichever form the
// server chooses.
func WithBinaryOutputs(on bool) ClientOption { return func(c *Client) { c.binOut = on } }

// WithTransport replaces the client's own transport (TLS, tests). The
// client then does not close its idle connections on Close.
func WithTransport(rt http.RoundTripper) ClientOption {
	return func(c *Client) {
		if rt != nil {
			c.hc.Transport = rt
			c.ownTransport = nil
		}
	}
}

// WithTransportWrapper wraps the client's transport (its own, or the one
// WithTransport set) with wrap, e.g. to instrument it; the client still
// closes its own transport's idle connections on Close.
func WithTransportWrapper(wrap func(http.RoundTripper) http.RoundTripper) ClientOption {
	return func(c *Client) { c.hc.Transport = wrap(c.hc.Transport) }
}

// WithMaxResponseBytes limits response bodies (default
// DefaultMaxResponseBytes); a larger one fails with EUNAVAILABLE.
func WithMaxResponseBytes(n int64) ClientOption {
	return func(c *Client) {
		if n > 0 {
			c.maxResp = n
		}
	}
}

// Client is an OIP REST client; it implements oip.Client and is safe for
// concurrent use. Connections are reused across calls.
type Client struct {
	base         string // scheme://host[:port][/prefix], no trailing slash
	hc           *http.Client
	ownTransport *http.Transport
	timeout      time.Duration
	host         string
	binIn        bool
	binOut       bool
	maxResp      int64
	bufs         sync.Pool
}

var _ oip.Client = (*Client)(nil)

// NewClient returns a client for the server at baseURL (http or https,
// optionally with a path prefix). It fails with EINVALID for a bad URL.
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, forecast.Errorf(forecast.EINVALID, "OIP base URL %q: want http[s]://host[:port][/prefix]", baseURL)
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	c := &Client{
		base:         strings.TrimRight(u.String(), "/"),
		hc:           &http.Client{Transport: tr},
		ownTransport: tr,
		timeout:      DefaultTimeout,
		maxResp:      DefaultMaxResponseBytes,
	}
	c.hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.bufs.New = func() any { return new(bytes.Buffer) }
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() error {
	if c.ownTransport != nil {
		c.ownTransport.CloseIdleConnections()
	}
	return nil
}

func modelPath(model, version string) string {
	p := "/v2/models/" + url.PathEscape(model)
	if version != "" {
		p += "/versions/" + url.PathEscape(version)
	}
	return p
}

// result is a finished HTTP exchange.
type result struct {
	status int
	header http.Header
	body   []byte
	buf    *bytes.Buffer // return with c.putBuf
}

// do performs one request; a transport failure or timeout is EUNAVAILABLE
// with the cause (context errors included) kept in the chain.
func (c *Client) do(ctx context.Context, method, path string, body []byte, hdr map[string]string) (*result, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, forecast.Errorf(forecast.EINVALID, "building request: %v", err)
	}
	if c.host != "" {
		req.Host = c.host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "application/json, application/octet-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, unavailable(ctx, method, path, err)
	}
	defer resp.Body.Close()
	buf := c.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, c.maxResp+1)); err != nil {
		c.putBuf(buf)
		return nil, unavailable(ctx, method, path, err)
	}
	if int64(buf.Len()) > c.maxResp {
		c.putBuf(buf)
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "%s %s: response larger than %d bytes", method, path, c.maxResp)
	}
	return &result{status: resp.StatusCode, header: resp.Header, body: buf.Bytes(), buf: buf}, nil
}

func (c *Client) putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuf {
		c.bufs.Put(b)
	}
}

func (c *Client) release(r *result) { c.putBuf(r.buf) }

func unavailable(ctx context.Context, method, path string, err error) error {
	if ce := ctx.Err(); ce != nil && !errors.Is(err, ce) {
		err = fmt.Errorf("%w: %w", ce, err)
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "OIP server unreachable or too slow (" + method + " " + path + ")", Err: err}
}

// upstreamText extracts the error text of a non-2xx body: {"error": "..."}
// (KServe, MLServer, us), else the trimmed body, else the status text.
func upstreamText(r *result) string {
	var we wireError
	if json.Unmarshal(r.body, &we) == nil && we.Error != "" {
		return truncate(we.Error, 512)
	}
	if s := strings.TrimSpace(string(r.body)); s != "" && !strings.HasPrefix(s, "{") {
		return truncate(s, 512)
	}
	return http.StatusText(r.status)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// statusError is the one table from an upstream status to the domain
// vocabulary: 400 EINVALID (but a 400 saying "not ready", MLServer's way,
// EUNAVAILABLE), 404 ENOTFOUND, 501 EINVALID (KServe refuses /versions/),
// 401/403 EUNAUTHORIZED, 413 and other 4xx EINVALID, 429/502/503/504
// EUNAVAILABLE, other 5xx EINTERNAL.
func statusError(r *result, what string) error {
	text := upstreamText(r)
	msg := fmt.Sprintf("%s: OIP server answered %d: %s", what, r.status, text)
	code := forecast.EINTERNAL
	switch s := r.status; {
	case s == http.StatusBadRequest && oip.NotReadyText(text):
		code = forecast.EUNAVAILABLE
	case s == http.StatusNotFound:
		code = forecast.ENOTFOUND
	case s == http.StatusNotImplemented:
		code = forecast.EINVALID
		msg = fmt.Sprintf("%s: OIP server does not implement this route (501; KServe serves no /versions/, call with version \"\"): %s", what, text)
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		code = forecast.EUNAUTHORIZED
	case s == http.StatusTooManyRequests || s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout:
		code = forecast.EUNAVAILABLE
	case s >= 400 && s < 500:
		code = forecast.EINVALID
	}
	return &forecast.Error{Code: code, Message: msg}
}

// health judges by status code only; the body is ignored.
func (c *Client) health(ctx context.Context, path, what string) error {
	r, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	defer c.release(r)
	if r.status >= 200 && r.status < 300 {
		return nil
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("%s: OIP server answered %d: %s", what, r.status, upstreamText(r))}
}

// ServerLive returns nil when GET /v2/health/live answers 2xx, else
// EUNAVAILABLE.
func (c *Client) ServerLive(ctx context.Context) error {
	return c.health(ctx, "/v2/health/live", "server live")
}

// ServerReady returns nil when GET /v2/health/ready answers 2xx, else
// EUNAVAILABLE.
func (c *Client) ServerReady(ctx context.Context) error {
	return c.health(ctx, "/v2/health/ready", "server ready")
}

// ModelReady returns nil when the model's ready route answers 2xx,
// ENOTFOUND for 404, EINVALID for 501 (no /versions/ route), else
// EUNAVAILABLE.
func (c *Client) ModelReady(ctx context.Context, model, version string) error {
	what := "model " + strconv.Quote(model) + " ready"
	r, err := c.do(ctx, http.MethodGet, modelPath(model, version)+"/ready", nil, nil)
	if err != nil {
		return err
	}
	defer c.release(r)
	switch {
	case r.status >= 200 && r.status < 300:
		return nil
	case r.status == http.StatusNotFound, r.status == http.StatusNotImplemented:
		return statusError(r, what)
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("%s: OIP server answered %d: %s", what, r.status, upstreamText(r))}
}

// getJSON GETs path and decodes a 2xx body into v.
func (c *Client) getJSON(ctx context.Context, path, what string, v any) error {
	r, err := c.do(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	defer c.release(r)
	if r.status < 200 || r.status > 299 {
		return statusError(r, what)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		return forecast.Errorf(forecast.EINVALID, "%s: %s from OIP server", what, forecast.ErrorMessage(jsonError("response", err)))
	}
	return nil
}

// ServerMetadata returns GET /v2.
func (c *Client) ServerMetadata(ctx context.Context) (oip.ServerMetadata, error) {
	var w wireServerMeta
	if err := c.getJSON(ctx, "/v2", "server metadata", &w); err != nil {
		return oip.ServerMetadata{}, err
	}
	return oip.ServerMetadata{Name: w.Name, Version: w.Version, Extensions: w.Extensions}, nil
}

// ModelMetadata returns the model's metadata; ENOTFOUND for an unknown
// model, EINVALID for a malformed answer (a tensor without a name or with
// an unknown datatype).
func (c *Client) ModelMetadata(ctx context.Context, model, version string) (oip.ModelMetadata, error) {
	what := "model " + strconv.Quote(model) + " metadata"
	var w wireModelMeta
	if err := c.getJSON(ctx, modelPath(model, version), what, &w); err != nil {
		return oip.ModelMetadata{}, err
	}
	md := metaFromWire(w)
	for _, ts := range [][]oip.TensorMetadata{md.Inputs, md.Outputs} {
		for _, t := range ts {
			if t.Name == "" || (!t.Datatype.Valid() && t.Datatype != oip.FP16) {
				return oip.ModelMetadata{}, forecast.Errorf(forecast.EINVALID, "%s: tensor %q with datatype %q", what, t.Name, t.Datatype)
			}
		}
	}
	return md, nil
}

// Infer posts req to the model's infer route. Inputs go in binary with
// WithBinaryInputs; JSON and binary responses are both decoded. The
// response is validated (shapes against data, datatypes) and its id must
// echo req.ID when both are set: otherwise EINVALID. req is not changed.
func (c *Client) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	what := "model " + strconv.Quote(model) + " infer"
	if req == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "%s: no request", what)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	var binIn func(*oip.Tensor) bool
	if c.binIn {
		binIn = func(t *oip.Tensor) bool { return t.Datatype.Numeric() }
	}
	// Not pooled: the transport may still read a request body after Do
	// returns (an early response), so the buffer is never reused.
	body, jsonLen, err := encodeRequest(make([]byte, 0, 1024), req, binIn, c.binOut)
	if err != nil {
		return nil, err
	}
	hdr := map[string]string{"Content-Type": "application/json"}
	if jsonLen >= 0 {
		hdr["Content-Type"] = "application/octet-stream"
		hdr[HeaderInferenceLength] = strconv.Itoa(jsonLen)
	}
	r, err := c.do(ctx, http.MethodPost, modelPath(model, version)+"/infer", body, hdr)
	if err != nil {
		return nil, err
	}
	defer c.release(r)
	if r.status < 200 || r.status > 299 {
		return nil, statusError(r, what)
	}
	resp, err := decodeResponse(r.body, r.header.Get(HeaderInferenceLength))
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: what + ": bad response from OIP server: " + forecast.ErrorMessage(err), Err: err}
	}
	if err := resp.Validate(); err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: what + ": bad response from OIP server: " + forecast.ErrorMessage(err), Err: err}
	}
	if req.ID != "" && resp.ID != "" && resp.ID != req.ID {
		return nil, forecast.Errorf(forecast.EINVALID, "%s: response id %q does not echo request id %q", what, resp.ID, req.ID)
	}
	return resp, nil
}
