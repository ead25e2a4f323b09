package httpapi

import (
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/gateway/httpedge"
)

// shedAnswers is the shed reason of a request whose handler found the
// budget spent when it asked to hold the data of a large answer (Hold).
const shedAnswers = "answers"

// holder is the Server as the httpedge.Holder its middleware sets on each
// request, so that handlers of every edge draw on the body budget.
type holder Server

var _ httpedge.Holder = (*holder)(nil)

// Hold takes n bytes for httpedge.Hold: the first FreeBodyBytes of them
// are free, as a body's are, and the rest is taken from the body budget
// until release is called (once; later calls do nothing). When the budget
// is spent the request is shed as one over the in-flight limit: err is the
// overload error (code unavailable), Retry-After is set, and it counts in
// carbongate_http_shed_total{reason="answers"}.
func (h *holder) Hold(c *echo.Context, n int64) (release func(), err error) {
	s := (*Server)(h)
	extra := n - FreeBodyBytes
	if extra <= 0 {
		return func() {}, nil
	}
	if !s.budget.Take(extra) {
		s.limiter.shedBy[3].Inc()
		httpedge.MarkShed(c)
		c.Response().Header().Set("Retry-After", strconv.Itoa(RetryAfter))
		return func() {}, overloaded(int(s.budget.Size()), "bytes of request bodies and answers being held")
	}
	var done bool
	return func() {
		if !done {
			done = true
			s.budget.Give(extra)
		}
	}, nil
}
