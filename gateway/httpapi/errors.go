package httpapi

// Errors: one table from error codes to HTTP statuses, one renderer.

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/carbongate/carbongate/forecast"
)

// httpError is an error with an HTTP-only meaning (no route, wrong method,
// body too large, wrong content type).
type httpError struct {
	status        int
	code, message string
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

type errorBody struct {
	Error     errorJSON `json:"error"`
	RequestID string    `json:"request_id"`
}

type errorJSON struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// handleError renders err as the error body with its status. Unknown
// errors become EINTERNAL with a generic message; their full text is logged
// with the request id.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	id, _ := c.Get(keyRequestID).(string)
	var body errorJSON
	status := http.StatusInternalServerError
	var he *httpError
	var ee *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status, body = he.status, errorJSON{Code: he.code, Message: he.message}
	case errors.As(err, &ee):
		status = ee.Code
		body = errorJSON{Code: echoCode(ee.Code), Message: http.StatusText(ee.Code)}
		if m, ok := ee.Message.(string); ok && m != "" {
			body.Message = m
		}
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusServiceUnavailable
		body = errorJSON{Code: forecast.EUNAVAILABLE, Message: "the request ran out of time"}
	case errors.Is(err, context.Canceled):
		status = http.StatusServiceUnavailable
		body = errorJSON{Code: forecast.EUNAVAILABLE, Message: "the request was canceled"}
	default:
		code := forecast.ErrorCode(err)
		status = statusOf[code]
		if status == 0 {
			code, status = forecast.EINTERNAL, http.StatusInternalServerError
		}
		body = errorJSON{Code: code, Field: forecast.ErrorField(err), Message: forecast.ErrorMessage(err)}
		if code == forecast.EINTERNAL {
			body.Message = "internal error"
		}
	}
	if status >= 500 && c.Get(keyShed) == nil { // shed requests are counted, not logged
		s.log.Error("request failed", "request_id", id, "status", status, "error", err.Error())
	}
	if err := writeJSON(c, status, errorBody{Error: body, RequestID: id}); err != nil {
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
