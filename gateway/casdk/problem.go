package casdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// problem is the SDK's error document, ASP.NET's ValidationProblemDetails:
// errors names each bad parameter with its messages; traceId is
// carbongate's request id.
type problem struct {
	Type    string              `json:"type,omitempty"`
	Title   string              `json:"title"`
	Status  int                 `json:"status"`
	Detail  string              `json:"detail,omitempty"`
	Errors  map[string][]string `json:"errors,omitempty"`
	TraceID string              `json:"traceId,omitempty"`
}

func (p *problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// Titles of the SDK's error documents: the .NET exception that maps to the
// status, or ASP.NET's model validation title.
const (
	titleValidation = "One or more validation errors occurred."
	titleArgument   = "ArgumentException"
	typeBadRequest  = "https://tools.ietf.org/html/rfc9110#section-15.5.1"
)

// invalid is a 400 naming param, in the SDK's model-validation shape.
func invalid(param, format string, args ...any) *problem {
	msg := fmt.Sprintf(format, args...)
	return &problem{Type: typeBadRequest, Title: titleValidation, Status: http.StatusBadRequest, Detail: msg,
		Errors: map[string][]string{param: {msg}}}
}

// argument is a 400 as the SDK's handlers raise it (an ArgumentException
// carrying the bad parameters).
func argument(detail string, errs map[string][]string) *problem {
	return &problem{Type: typeBadRequest, Title: titleArgument, Status: http.StatusBadRequest, Detail: detail, Errors: errs}
}

// unavailable is a 503: a store or the forecasts cannot answer now.
func unavailable(detail string) *problem {
	return &problem{Title: "ServiceUnavailable", Status: http.StatusServiceUnavailable, Detail: detail}
}

// toProblem maps an error of the gateway or a store to the SDK's document:
// EINVALID is 400 naming its field as param (or param when it names none),
// ENOTFOUND 400 on param, EUNAVAILABLE and context errors 503, anything
// else 500 with no detail (the caller logs it).
func toProblem(err error, param string) *problem {
	var p *problem
	if errors.As(err, &p) {
		return p
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return unavailable("the request ran out of time")
	case errors.Is(err, context.Canceled):
		return unavailable("the request was canceled")
	}
	switch forecast.ErrorCode(err) {
	case forecast.EINVALID, forecast.ENOTFOUND, forecast.EINFEASIBLE:
		if f := forecast.ErrorField(err); f != "" && param == "" {
			param = f
		}
		return invalid(param, "%s", forecast.ErrorMessage(err))
	case forecast.EUNAVAILABLE:
		return unavailable(forecast.ErrorMessage(err))
	}
	return &problem{Title: "InternalServerError", Status: http.StatusInternalServerError}
}

// handle wraps a handler: its error is answered with the SDK's document
// (500s logged with the request id), never left to the server's own
// error shape.
func (a *API) handle(h func(c *echo.Context) error) echo.HandlerFunc {
	return func(c *echo.Context) error {
		err := h(c)
		if err == nil || httpedge.Committed(c) {
			return nil
		}
		p := toProblem(err, "")
		id := c.Response().Header().Get(httpedge.HeaderRequestID)
		if p.Status >= 500 && !httpedge.Shed(c) { // shed requests are counted, not logged
			a.log.Error("casdk request failed", "request_id", id, "route", c.Path(), "status", p.Status, "error", err.Error())
		}
		out := *p
		out.TraceID = id
		return c.JSON(out.Status, out)
	}
}

// notFound answers a path under the API's prefix that it does not serve.
func notFound(c *echo.Context) error {
	return &problem{Title: "Not Found", Status: http.StatusNotFound,
		Detail: fmt.Sprintf("no route %s under the Carbon Aware SDK API", clip(c.Request().URL.Path))}
}

// methodNotAllowed answers a route of the API asked with another method
// than allowed.
func methodNotAllowed(allowed string) echo.HandlerFunc {
	return func(c *echo.Context) error {
		c.Response().Header().Set(echo.HeaderAllow, allowed)
		return &problem{Title: "Method Not Allowed", Status: http.StatusMethodNotAllowed,
			Detail: fmt.Sprintf("%s takes %s, not %s", c.Request().URL.Path, allowed, clip(c.Request().Method))}
	}
}

// render writes an error the server raised for the API's routes (a body
// too large, headers too large, an overload) as the SDK's error document.
func render(c *echo.Context, status int, e httpedge.ErrorInfo) error {
	p := problem{Title: http.StatusText(status), Status: status, Detail: e.Message, TraceID: e.RequestID}
	if status == http.StatusBadRequest {
		p.Type = typeBadRequest
	}
	if e.Field != "" && status < 500 {
		p.Errors = map[string][]string{e.Field: {e.Message}}
	}
	return c.JSON(status, p)
}
