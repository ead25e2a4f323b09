package httpapi

import (
	"strconv"

	"github.com/labstack/echo/v5"
)

// shedAnswers is the shed reason of a request whose handler found the
// budget spent when it asked to hold the data of a large answer (Hold).
const shedAnswers = "answers"

const keyServer = "httpapi_server"

// Hold takes n bytes, what a handler is about to hold in memory for one
// request (the data of a large answer), from the budget that request
// bodies draw on: the first FreeBodyBytes of them are free, as a body's
// are, and the rest is taken from the budget until release is called
// (once; later calls do nothing). When the budget is spent the request is
// shed as one over the in-flight limit: err is the overload error (code
// unavailable), Retry-After is set, and it counts in
// carbongate_http_shed_total{reason="answers"}. Outside a Server's
// middleware there is no budget, and Hold takes nothing.
func Hold(c *echo.Context, n int64) (release func(), err error) {
	s, ok := c.Get(keyServer).(*Server)
	extra := n - FreeBodyBytes
	if !ok || extra <= 0 {
		return func() {}, nil
	}
	if !s.budget.Take(extra) {
		s.limiter.shedBy[3].Inc()
		c.Set(keyShed, true)
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

// Shed reports whether the request of c was shed for overload (by the
// server's limits or by Hold): such requests are counted, not logged.
func Shed(c *echo.Context) bool { return c.Get(keyShed) != nil }
