// Package httpedge is what the HTTP edges mounted on carbongate's server
// (the scheduling API of gateway/httpapi, the Carbon Aware SDK API of
// gateway/casdk, the admission webhook of gateway/admission, the MLflow
// API) share with that server: how their routes are served (Route), the
// request id header, and the request-scoped state the server's middleware
// leaves in each Echo context (the body it read, whether the request was
// shed, the budget Hold draws on).
//
// It sits below the edges so that no edge imports another: the server in
// gateway/httpapi fills the state (SetBody, MarkShed, SetHolder) and the
// edges read it.
package httpedge

import "github.com/labstack/echo/v5"

// HeaderRequestID carries a request's id: taken from the request when
// valid, else made up, and set on every answer.
const HeaderRequestID = "X-Request-Id"

// Route sets how the routes under a path prefix are served: how large a
// body they take and how a request of theirs shed for overload is
// answered. Routes not covered take the server's default body limit and
// the plain 503.
type Route struct {
	Prefix  string // matched against the route's path; the longest prefix wins
	MaxBody int64  // largest request body, 413 beyond it; 0: the server's default
	// Shed, when set, answers a request of these routes shed for overload
	// instead of the 503 error, e.g. the admission webhook, whose client
	// needs an AdmissionReview. It runs without a slot, after the body has
	// been read; reason is the overload error (code unavailable). It must
	// be cheap: the server is overloaded.
	Shed func(c *echo.Context, reason error) error
	// Render, when set, writes the errors of these routes that the server
	// raises rather than their handlers (a body too large or cut short,
	// headers too large, an overload 503 when Shed is not set, a panic) in
	// the routes' own error document, e.g. the Carbon Aware SDK's; it gets
	// the status and the error as the server's document would carry it.
	Render func(c *echo.Context, status int, e ErrorInfo) error
}

// ErrorInfo is an error as the server's error document carries it.
type ErrorInfo struct {
	Code, Field, Message, RequestID string
}

// Keys of the request-scoped state in the Echo context.
const (
	keyBody    = "body"
	keyPartial = "body_partial"
	keyShed    = "shed"
	keyHolder  = "httpapi_server"
)

// Body returns the request body the server read before the handler ran,
// and whether it is whole: false when there was none, and in a Route.Shed
// called because the body budget was spent, where body is the part read.
// Handlers may also read the request's Body, which yields the same bytes.
// body is valid until the handler returns.
func Body(c *echo.Context) (body []byte, complete bool) {
	b, ok := c.Get(keyBody).([]byte)
	return b, ok && c.Get(keyPartial) == nil
}

// SetBody records the body the server read for c; complete false when it
// is only the part read before the body budget was found spent.
func SetBody(c *echo.Context, body []byte, complete bool) {
	c.Set(keyBody, body)
	if !complete {
		c.Set(keyPartial, true)
	}
}

// Shed reports whether the request of c was shed for overload (by the
// server's limits or by Hold): such requests are counted, not logged.
func Shed(c *echo.Context) bool { return c.Get(keyShed) != nil }

// MarkShed records that the request of c was shed for overload.
func MarkShed(c *echo.Context) { c.Set(keyShed, true) }

// Holder is the budget Hold draws on: the server's, which it sets on each
// request (SetHolder).
type Holder interface {
	Hold(c *echo.Context, n int64) (release func(), err error)
}

// SetHolder makes h the budget that Hold draws on for the request of c.
func SetHolder(c *echo.Context, h Holder) { c.Set(keyHolder, h) }

// Hold takes n bytes, what a handler is about to hold in memory for one
// request (the data of a large answer), from the budget that request
// bodies draw on: the first of them are free, as a body's are, and the
// rest is taken from the budget until release is called (once; later
// calls do nothing). When the budget is spent the request is shed as one
// over the in-flight limit: err is the overload error (code unavailable)
// and Retry-After is set. Outside a server's middleware there is no
// budget, and Hold takes nothing.
func Hold(c *echo.Context, n int64) (release func(), err error) {
	h, ok := c.Get(keyHolder).(Holder)
	if !ok {
		return func() {}, nil
	}
	return h.Hold(c, n)
}

// Committed reports whether the answer to c has been started (its status
// sent), after which an error can no longer be rendered.
func Committed(c *echo.Context) bool {
	r, _ := echo.UnwrapResponse(c.Response())
	return r != nil && r.Committed
}
