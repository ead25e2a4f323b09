package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/oip"
)

// FreeBodyBytes is the part of each request body read without drawing
// on the body budget: every request of the scheduling API, and most of the
// others, fit in it, so well-behaved clients are never shed for the
// bodies of others. The memory it can take is bounded by the connection
// limit.
const FreeBodyBytes = MaxBodyBytes

// BodyBudgetPerCPU sets the default body budget: DefaultBodyBudget is
// BodyBudgetPerCPU × GOMAXPROCS bytes.
//
// Why 16 MiB: bodies beyond FreeBodyBytes are AdmissionReviews of large
// objects and registry writes with long descriptions, a few at a time;
// 16 MiB holds five of the largest AdmissionReviews per core being read
// at once, while bounding what clients that send large bodies and stall
// can make the process hold.
const BodyBudgetPerCPU = 16 << 20

// DefaultBodyBudget is the body budget used when Config.BodyBudget is 0.
func DefaultBodyBudget() int64 { return BodyBudgetPerCPU * int64(runtime.GOMAXPROCS(0)) }

// shedBodies is the shed reason of a request whose body found the budget
// spent.
const shedBodies = "bodies"

// route returns the settings of the route at path.
func (s *Server) route(path string) httpedge.Route {
	return s.routesBy.get(path)
}

func (s *Server) matchRoute(path string) httpedge.Route {
	best := httpedge.Route{MaxBody: MaxBodyBytes}
	n := -1
	for _, r := range s.cfg.Routes {
		if strings.HasPrefix(path, r.Prefix) && len(r.Prefix) > n {
			best, n = r, len(r.Prefix)
			if best.MaxBody == 0 {
				best.MaxBody = MaxBodyBytes
			}
		}
	}
	return best
}

// body is the middleware that reads a request's body whole before the
// limiter gives it a slot: a client that sends its body slowly holds a
// connection and the bytes it has sent, never a slot others need. Bodies
// larger than the route's MaxBody are refused with 413 before they are
// read; bytes beyond FreeBodyBytes draw on the body budget, and a request
// that finds it spent is shed like one over the in-flight limit. A body
// that ends before its Content-Length gets 400, one that is still
// arriving when the read timeout passes gets 408; both close the
// connection.
func (s *Server) body(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		req := c.Request()
		if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 || !hasBody(req.Method) || !limited(c.Path()) {
			return next(c)
		}
		rt := s.route(c.Path())
		if req.ContentLength > rt.MaxBody {
			c.Response().Header().Set(echo.HeaderConnection, "close")
			return tooLarge(rt.MaxBody)
		}
		bp := slicePool.Get().(*[]byte)
		body, held, err := oip.ReadBody(req.Body, req.ContentLength, rt.MaxBody, s.budget, *bp)
		defer func() {
			s.budget.Give(held)
			if cap(body) <= 64<<10 {
				*bp = body[:0]
				slicePool.Put(bp)
			}
		}()
		if err != nil {
			return s.bodyError(c, rt, err, body)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		httpedge.SetBody(c, body, true)
		return next(c)
	}
}

// bodyError renders a failed body read.
func (s *Server) bodyError(c *echo.Context, rt httpedge.Route, err error, body []byte) error {
	got := len(body)
	req := c.Request()
	h := c.Response().Header()
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, oip.ErrBodyBudget):
		httpedge.SetBody(c, body, false)
		s.limiter.shedBy[2].Inc()
		h.Set("Retry-After", strconv.Itoa(RetryAfter))
		return s.shed(c, rt, overloaded(int(s.budget.Size()), "bytes of request bodies being read"))
	case errors.As(err, &mbe):
		h.Set(echo.HeaderConnection, "close")
		return tooLarge(rt.MaxBody)
	case oip.LateBody(c.Response(), err):
		return &httpError{status: http.StatusRequestTimeout, code: "timeout",
			message: fmt.Sprintf("the request body did not arrive in time: %d of %s bytes", got, declared(req.ContentLength))}
	default:
		h.Set(echo.HeaderConnection, "close")
		return forecast.FieldErrorf(forecast.EINVALID, "body",
			"the request body ended after %d of %s bytes", got, declared(req.ContentLength))
	}
}

// hasBody reports whether requests of method carry a body the routes
// read: GET and HEAD bodies are ignored, as before any body middleware.
func hasBody(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

func declared(n int64) string {
	if n < 0 {
		return "an unknown number of"
	}
	return strconv.FormatInt(n, 10)
}

func tooLarge(max int64) error {
	return &httpError{status: http.StatusRequestEntityTooLarge, code: "too_large",
		message: fmt.Sprintf("request body is larger than %d bytes", max)}
}
