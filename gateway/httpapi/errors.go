package httpapi

// Errors: one table from error codes to HTTP statuses, one renderer.

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// httpError is an error with an HTTP-only meaning (no route, wrong method,
// body too large, wrong content type).
type httpError struct {
	status        int
	code, message string
	probe         bool // an expected answer to a probe (readyz), not a failure: not logged
}

func (e *httpError) Error() string { return e.code + ": " + e.message }

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[string]int{
	forecast.EINVALID:      http.StatusBadRequest,
	forecast.EINFEASIBLE:   http.StatusUnprocessableEntity,
	forecast.ENOTFOUND:     http.StatusNotFound,
	forecast.ECONFLICT:     http.StatusConflict,
	forecast.EUNAUTHORIZED: http.StatusUnauthorized,
	forecast.EUNAVAILABLE:  http.StatusServiceUnavailable,
	forecast.EINTERNAL:     http.StatusInternalServerError,
}

// handleError renders err as the error body with its status. Unknown
// errors become EINTERNAL with a generic message; their full text is logged
// with the request id.
func (s *Server) handleError(c *echo.Context, err error) {
	if httpedge.Committed(c) {
		return
	}
	id, _ := c.Get(keyRequestID).(string)
	var body api.ErrorDetail
	status := http.StatusInternalServerError
	var he *httpError
	var ee echo.HTTPStatusCoder // *echo.HTTPError and echo's own errors (echo.ErrNotFound…)
	switch {
	case errors.As(err, &he):
		status, body = he.status, api.ErrorDetail{Code: he.code, Message: he.message}
	case errors.As(err, &ee):
		status = ee.StatusCode()
		body = api.ErrorDetail{Code: echoCode(status), Message: http.StatusText(status)}
		if m, ok := ee.(*echo.HTTPError); ok && m.Message != "" {
			body.Message = m.Message
		}
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
		body = api.ErrorDetail{Code: forecast.EUNAVAILABLE, Message: "the request ran out of time"}
	case errors.Is(err, context.Canceled):
		status = http.StatusServiceUnavailable
		body = api.ErrorDetail{Code: forecast.EUNAVAILABLE, Message: "the request was canceled"}
	default:
		code := forecast.ErrorCode(err)
		status = statusOf[code]
		if status == 0 {
			code, status = forecast.EINTERNAL, http.StatusInternalServerError
		}
		body = api.ErrorDetail{Code: code, Field: forecast.ErrorField(err), Message: forecast.ErrorMessage(err)}
		if code == forecast.EINTERNAL {
			body.Message = "internal error"
		}
	}
	if status >= 500 && !httpedge.Shed(c) && (he == nil || !he.probe) { // shed requests are counted, not logged
		s.log.Error("request failed", "request_id", id, "status", status, "error", err.Error())
	}
	write := func() error { return writeJSON(c, status, api.ErrorBody{Error: body, RequestID: id}) }
	if rt := s.route(c.Path()); rt.Render != nil && c.Path() != "" {
		write = func() error {
			return rt.Render(c, status, httpedge.ErrorInfo{Code: body.Code, Field: body.Field, Message: body.Message, RequestID: id})
		}
	}
	if err := write(); err != nil {
		c.Set(keyWriteError, err) // the access log says the answer was not delivered
	}
}

func echoCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return forecast.ENOTFOUND
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusUnsupportedMediaType:
		return "unsupported_media_type"
	case http.StatusUnauthorized:
		return forecast.EUNAUTHORIZED
	case http.StatusServiceUnavailable:
		return forecast.EUNAVAILABLE
	}
	if status >= 400 && status < 500 {
		return forecast.EINVALID
	}
	return forecast.EINTERNAL
}
