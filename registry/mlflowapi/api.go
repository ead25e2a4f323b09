// Package mlflowapi serves MLflow's model-registry REST API over a
// registry.Store, on Echo: registered models, model versions, tags,
// aliases, stages, search and download URIs, under /api/2.0/mlflow/ and
// /ajax-api/2.0/mlflow/, with MLflow's methods, parameters, JSON shapes and
// error codes, so that MLflow's own client (mlflow.MlflowClient) and UI
// work against it.
//
// Requests: GET takes query parameters (repeated keys for lists), or a JSON
// body when there are none (as MLflow does); POST and PATCH take a JSON
// body (POST with Content-Type application/json, as MLflow requires);
// DELETE takes a JSON body, or query parameters when the body is empty.
// Unlike MLflow, unknown JSON fields are rejected (MLflow ignores them), so
// that a misspelt field does not silently do nothing; every field of
// MLflow's own request messages is known, including those carbongate
// accepts and ignores (deployment_job_id, model_id).
//
// Errors are {"error_code", "message"}: RESOURCE_DOES_NOT_EXIST 404,
// RESOURCE_ALREADY_EXISTS 400, INVALID_PARAMETER_VALUE 400,
// UNAUTHENTICATED 401, TEMPORARILY_UNAVAILABLE 503, INTERNAL_ERROR 500
// with a generic message (the full error is logged). Every error goes
// through one function, API.HTTPErrorHandler, which a server may also
// install as Echo's error handler.
package mlflowapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// URL prefixes the API is mounted under.
const (
	PrefixAPI  = "/api/2.0/mlflow"
	PrefixAjax = "/ajax-api/2.0/mlflow"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultTimeout      = 30 * time.Second
)

// Config configures an API.
type Config struct {
	// Store is the registry; required.
	Store registry.Store
	// Token, when non-empty, is the bearer token every write (POST, PATCH,
	// DELETE, except the read-only POST get-latest-versions) must carry in
	// "Authorization: Bearer <Token>". Reads are open unless AuthReads.
	Token string
	// AuthReads makes reads need the token too (when Token is set).
	AuthReads bool
	// ArtifactURI maps a version to the URI get-download-uri returns (e.g.
	// mlflow-artifacts:/X to the server's artifact destination); default
	// registry.ModelVersion.ArtifactLocation.
	ArtifactURI func(registry.ModelVersion) string
	// Logger receives server-side failures; nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies (413 beyond it); default
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Timeout bounds the store calls of one request; default
	// DefaultTimeout.
	Timeout time.Duration
}

// API is MLflow's model-registry REST API. It is safe for concurrent use.
type API struct {
	cfg       Config
	log       *slog.Logger
	tokenHash [sha256.Size]byte
	routes    []route
}

// route is one endpoint: its method, path under a prefix, whether it
// writes, and its handler.
type route struct {
	method, path string
	write        bool
	handle       func(ctx context.Context, in *input) (any, error)
}

// New validates cfg, fills its defaults and returns the API.
func New(cfg Config) (*API, error) {
	switch {
	case cfg.Store == nil:
		return nil, forecast.Errorf(forecast.EINVALID, "mlflowapi: Store is required")
	case cfg.MaxBodyBytes < 0:
		return nil, forecast.Errorf(forecast.EINVALID, "mlflowapi: MaxBodyBytes %d is negative", cfg.MaxBodyBytes)
	case cfg.Timeout < 0:
		return nil, forecast.Errorf(forecast.EINVALID, "mlflowapi: Timeout %s is negative", cfg.Timeout)
	case strings.TrimSpace(cfg.Token) != cfg.Token:
		return nil, forecast.Errorf(forecast.EINVALID, "mlflowapi: Token has leading or trailing space")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ArtifactURI == nil {
		cfg.ArtifactURI = registry.ModelVersion.ArtifactLocation
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &API{cfg: cfg, log: cfg.Logger, tokenHash: sha256.Sum256([]byte(cfg.Token))}
	a.routes = a.table()
	return a, nil
}

// table lists every endpoint (paths relative to a prefix).
func (a *API) table() []route {
	return []route{
		{http.MethodPost, "/registered-models/create", true, a.createModel},
		{http.MethodGet, "/registered-models/get", false, a.getModel},
		{http.MethodPost, "/registered-models/rename", true, a.renameModel},
		{http.MethodPatch, "/registered-models/update", true, a.updateModel},
		{http.MethodDelete, "/registered-models/delete", true, a.deleteModel},
		{http.MethodGet, "/registered-models/search", false, a.searchModels},
		{http.MethodGet, "/registered-models/get-latest-versions", false, a.latestVersions},
		{http.MethodPost, "/registered-models/get-latest-versions", false, a.latestVersions},
		{http.MethodPost, "/registered-models/set-tag", true, a.setModelTag},
		{http.MethodDelete, "/registered-models/delete-tag", true, a.deleteModelTag},
		{http.MethodPost, "/registered-models/alias", true, a.setAlias},
		{http.MethodDelete, "/registered-models/alias", true, a.deleteAlias},
		{http.MethodGet, "/registered-models/alias", false, a.versionByAlias},
		{http.MethodPost, "/model-versions/create", true, a.createVersion},
		{http.MethodGet, "/model-versions/get", false, a.getVersion},
		{http.MethodPatch, "/model-versions/update", true, a.updateVersion},
		{http.MethodDelete, "/model-versions/delete", true, a.deleteVersion},
		{http.MethodPost, "/model-versions/transition-stage", true, a.transitionStage},
		{http.MethodGet, "/model-versions/search", false, a.searchVersions},
		{http.MethodGet, "/model-versions/get-download-uri", false, a.downloadURI},
		{http.MethodPost, "/model-versions/set-tag", true, a.setVersionTag},
		{http.MethodDelete, "/model-versions/delete-tag", true, a.deleteVersionTag},
	}
}

// Register mounts every endpoint on e under PrefixAPI and PrefixAjax.
func (a *API) Register(e *echo.Echo) {
	for _, prefix := range []string{PrefixAPI, PrefixAjax} {
		for _, rt := range a.routes {
			e.Add(rt.method, prefix+rt.path, a.handler(rt))
		}
	}
}

// Routes lists the endpoints as "METHOD path" under PrefixAPI.
func (a *API) Routes() []string {
	out := make([]string, len(a.routes))
	for i, rt := range a.routes {
		out[i] = rt.method + " " + PrefixAPI + rt.path
	}
	return out
}

// handler adapts a route to Echo: it checks the token, reads the body,
// calls the route with a deadline and writes the result, or the error
// through HTTPErrorHandler. It always returns nil: the response is written.
func (a *API) handler(rt route) echo.HandlerFunc {
	return func(c *echo.Context) error {
		out, err := a.serve(c, rt)
		if err != nil {
			a.HTTPErrorHandler(c, err)
			return nil
		}
		if err := writeJSON(c, http.StatusOK, out); err != nil {
			a.HTTPErrorHandler(c, err)
		}
		return nil
	}
}

func (a *API) serve(c *echo.Context, rt route) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("mlflowapi: panic in %s %s: %v", rt.method, rt.path, p)
		}
	}()
	if rt.write || a.cfg.AuthReads {
		if err := a.authorize(c.Request()); err != nil {
			return nil, err
		}
	}
	in, err := a.readInput(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), a.cfg.Timeout)
	defer cancel()
	return rt.handle(ctx, in)
}

// authorize checks the bearer token in constant time (comparing hashes, so
// the token's length does not leak either).
func (a *API) authorize(r *http.Request) error {
	if a.cfg.Token == "" {
		return nil
	}
	scheme, tok, _ := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], a.tokenHash[:]) != 1 {
		return &statusError{status: http.StatusUnauthorized, code: "UNAUTHENTICATED",
			message: "this request needs a valid bearer token (Authorization: Bearer <token>)"}
	}
	return nil
}

// readInput reads the body (up to MaxBodyBytes) and the query. POST
// bodies must be JSON, as MLflow requires.
func (a *API) readInput(c *echo.Context) (*input, error) {
	r := c.Request()
	if r.Method == http.MethodPost {
		ct := r.Header.Get(echo.HeaderContentType)
		if ct == "" {
			return nil, invalid("", "Bad Request. Content-Type header is missing.")
		}
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {
			return nil, invalid("", "Bad Request. Content-Type must be one of ['application/json'].")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, a.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &statusError{status: http.StatusRequestEntityTooLarge, code: codeInvalid,
				message: fmt.Sprintf("the request body exceeds %d bytes", a.cfg.MaxBodyBytes)}
		}
		return nil, forecast.Errorf(forecast.EINVALID, "reading the request body: %v", err)
	}
	return &input{method: r.Method, query: r.URL.Query(), body: body}, nil
}
