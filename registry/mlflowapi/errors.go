package mlflowapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
)

// MLflow error codes (databricks.proto's ErrorCode names).
const (
	codeInvalid     = "INVALID_PARAMETER_VALUE"
	codeNotFound    = "RESOURCE_DOES_NOT_EXIST"
	codeExists      = "RESOURCE_ALREADY_EXISTS"
	codeUnauth      = "UNAUTHENTICATED"
	codeUnavailable = "TEMPORARILY_UNAVAILABLE"
	codeInternal    = "INTERNAL_ERROR"
	codeNoEndpoint  = "ENDPOINT_NOT_FOUND"
	codeBadRequest  = "BAD_REQUEST"
)

// mlflowCode is the one table from carbongate's error codes to MLflow's
// error_code and HTTP status.
var mlflowCode = map[string]struct {
	code   string
	status int
}{
	forecast.EINVALID:      {codeInvalid, http.StatusBadRequest},
	forecast.ENOTFOUND:     {codeNotFound, http.StatusNotFound},
	forecast.ECONFLICT:     {codeExists, http.StatusBadRequest},
	forecast.EUNAUTHORIZED: {codeUnauth, http.StatusUnauthorized},
	forecast.EUNAVAILABLE:  {codeUnavailable, http.StatusServiceUnavailable},
}

// statusError is an error with an HTTP-only meaning: a missing token, a
// body too large.
type statusError struct {
	status        int
	code, message string
}

func (e *statusError) Error() string { return e.code + ": " + e.message }

// errorBody is MLflow's error response.
type errorBody struct {
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

// HTTPErrorHandler renders err as MLflow's error body with its status. It
// is the only place errors become responses; a server may install it as
// echo.Echo.HTTPErrorHandler so that unknown paths and methods answer in
// the same shape. Unknown errors become INTERNAL_ERROR with a generic
// message; they are logged in full (never the request's headers).
func (a *API) HTTPErrorHandler(c *echo.Context, err error) {
	if r, _ := echo.UnwrapResponse(c.Response()); r != nil && r.Committed {
		return
	}
	status, body := http.StatusInternalServerError, errorBody{ErrorCode: codeInternal, Message: "internal error"}
	var se *statusError
	var he echo.HTTPStatusCoder // *echo.HTTPError and echo's own errors (echo.ErrNotFound…)
	switch {
	case errors.As(err, &se):
		status, body = se.status, errorBody{se.code, se.message}
		if se.status == http.StatusUnauthorized {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, "Bearer")
		}
	case errors.As(err, &he):
		status, body = he.StatusCode(), echoBody(he)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		status, body = http.StatusServiceUnavailable, errorBody{codeUnavailable, "the request ran out of time"}
	default:
		if m, ok := mlflowCode[forecast.ErrorCode(err)]; ok {
			status, body = m.status, errorBody{m.code, forecast.ErrorMessage(err)}
		}
	}
	if status >= http.StatusInternalServerError {
		r := c.Request()
		a.log.ErrorContext(r.Context(), "mlflowapi: request failed", "method", r.Method, "path", r.URL.Path,
			"request_id", r.Header.Get(echo.HeaderXRequestID), "status", status, "error", err.Error())
	}
	if err := writeJSON(c, status, body); err != nil {
		a.log.Warn("mlflowapi: writing the error response", "error", err)
	}
}

func echoBody(he echo.HTTPStatusCoder) errorBody {
	code := he.StatusCode()
	var msg string
	if e, ok := he.(*echo.HTTPError); ok {
		msg = e.Message
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	switch {
	case code == http.StatusNotFound:
		return errorBody{codeNoEndpoint, msg}
	case code == http.StatusUnauthorized:
		return errorBody{codeUnauth, msg}
	case code == http.StatusServiceUnavailable:
		return errorBody{codeUnavailable, msg}
	case code >= 500:
		return errorBody{codeInternal, msg}
	}
	return errorBody{codeBadRequest, msg}
}

// invalid is EINVALID naming field.
func invalid(field, format string, args ...any) error {
	return forecast.FieldErrorf(forecast.EINVALID, field, format, args...)
}
