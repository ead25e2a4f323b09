// Package mlflowclient is a registry.Store over MLflow's model-registry
// REST API (/api/2.0/mlflow/registered-models/... and
// /model-versions/...), so that carbongate's tools can use a real MLflow
// server, or carbongate's own registry server (registry/mlflowapi), as
// their registry.
//
// It speaks the API as MLflow's own RestStore does: GET with query
// parameters (repeated keys for lists), POST, PATCH and DELETE with JSON
// bodies; an optional bearer token (MLflow's MLFLOW_TRACKING_TOKEN, which
// callers read from the environment); a deadline on every call.
//
// Errors are *forecast.Error values mapped from MLflow's error_code:
// RESOURCE_DOES_NOT_EXIST → ENOTFOUND, RESOURCE_ALREADY_EXISTS → ECONFLICT,
// INVALID_PARAMETER_VALUE → EINVALID, UNAUTHENTICATED and PERMISSION_DENIED
// (and HTTP 401/403) → EUNAUTHORIZED, server errors (5xx), an endpoint the
// server does not have, and connection failures or timeouts →
// EUNAVAILABLE. Context errors stay in the chain. Input the API would
// refuse (names, aliases, tags, stages) is checked before any call with the
// validators of package registry, so such errors name their Field.
//
// Where MLflow's API or server differs from the registry.Store contract
// the client passes MLflow's behaviour on, except where the contract only
// fixes an order or a code: LatestVersions is ordered by stage, a missing
// alias in VersionByAlias is ENOTFOUND, archiving others on a transition to
// None or Archived is EINVALID. It cannot set NewVersion.UserID (the server
// records its caller) nor a Status other than READY; registry.Options.Now
// does not apply (the server keeps its own clock). See README.md for what
// a real MLflow server does differently.
package mlflowclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// DefaultTimeout bounds one API call when Options.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// apiPrefix is where MLflow serves its REST API.
const apiPrefix = "/api/2.0/mlflow/"

// Limits on the bodies the client reads.
const (
	maxBody      = 64 << 20
	maxErrorBody = 64 << 10
)

// Options configure a Client.
type Options struct {
	// Token, when set, is sent as "Authorization: Bearer <Token>" (MLflow
	// clients read it from MLFLOW_TRACKING_TOKEN).
	Token string
	// HTTPClient makes the calls; default a client of the Client's own,
	// whose idle connections Close releases.
	HTTPClient *http.Client
	// Timeout bounds each call (the caller's deadline applies too,
	// whichever is earlier). Default DefaultTimeout.
	Timeout time.Duration
}

// Client is a registry.Store over one MLflow tracking server. It is safe
// for concurrent use.
type Client struct {
	base    string // scheme://host[/path] without a trailing slash
	token   string
	hc      *http.Client
	ownHC   bool
	timeout time.Duration
}

var _ registry.Store = (*Client)(nil)

// New returns a Client for the server at baseURL (e.g.
// "http://mlflow:5000", or with a path prefix when the server sits behind
// one). It makes no call. EINVALID for a URL that is not absolute http(s)
// or a negative timeout.
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "registry_uri", "registry URI %q is not an http:// or https:// URL", redact(baseURL))
	}
	if opts.Timeout < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "timeout", "timeout %v must not be negative", opts.Timeout)
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), token: opts.Token, hc: opts.HTTPClient, timeout: opts.Timeout}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 16
		c.hc, c.ownHC = &http.Client{Transport: tr}, true
	}
	return c, nil
}

// URL returns the server's base URL without its userinfo, for logs.
func (c *Client) URL() string { return redact(c.base) }

// Close releases idle connections of the Client's own HTTP client. Calls
// made after Close still work.
func (c *Client) Close() error {
	if c.ownHC {
		c.hc.CloseIdleConnections()
	}
	return nil
}

// get calls GET path with query and decodes the answer into out.
func (c *Client) get(ctx context.Context, path string, query url.Values, out any) error {
	return c.do(ctx, http.MethodGet, path, query, nil, out)
}

// send calls method path with in as its JSON body and decodes the answer
// into out (nil: the answer is discarded).
func (c *Client) send(ctx context.Context, method, path string, in, out any) error {
	return c.do(ctx, method, path, nil, in, out)
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	target := c.base + apiPrefix + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return &forecast.Error{Code: forecast.EINTERNAL, Message: "mlflow: cannot encode the request", Err: err}
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "mlflow: cannot build the request", Err: err}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return unreachable(c.base, method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if rerr != nil && ctx.Err() != nil {
			return unreachable(c.base, method, path, rerr)
		}
		return apiError(method, path, resp.StatusCode, b)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return unreachable(c.base, method, path, err)
	}
	if len(b) > maxBody {
		return forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: %s %s: the answer is larger than %d bytes", method, path, maxBody)
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("mlflow: %s %s: the answer is not MLflow's JSON", method, path), Err: err}
	}
	return nil
}

// unreachable wraps a transport error (the context's error stays in the
// chain).
func unreachable(base, method, path string, err error) error {
	what := "cannot reach"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		what = "timed out calling"
	case errors.Is(err, context.Canceled):
		what = "canceled calling"
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("mlflow: %s %s (%s %s)", what, redact(base), method, path), Err: err}
}

// redact drops the userinfo of a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
