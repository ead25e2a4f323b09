package httpapi

// Middleware: request ids, deadlines, panics, metrics and the access log;
// HEAD on GET routes.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/gateway/httpedge"
)

const (
	keyRequestID  = "request_id"
	keyWriteError = "write_error"
)

// headAsGet serves HEAD requests with the GET handlers, whose bodies it
// drops: routed as GET, answered as HEAD (the method is restored before
// net/http writes the answer, which a handler's writes never reach).
func headAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodHead {
			return next(c)
		}
		r.Method = http.MethodGet
		defer func() { r.Method = http.MethodHead }()
		if resp, err := echo.UnwrapResponse(c.Response()); err == nil {
			resp.ResponseWriter = headWriter{resp.ResponseWriter} // under echo's Response, which still counts the bytes
		}
		return next(c)
	}
}

// headWriter drops the body of a HEAD answer.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(p []byte) (int, error) { return len(p), nil }

// middleware gives each request an id and a deadline, recovers panics,
// renders errors, and records metrics and the access log.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) (err error) {
		t0 := time.Now()
		req := c.Request()
		resp, _ := echo.UnwrapResponse(c.Response()) // echo's *Response: status and bytes sent
		id := req.Header.Get(httpedge.HeaderRequestID)
		if !validID(id) {
			id = newID()
		}
		c.Set(keyRequestID, id)
		httpedge.SetHolder(c, (*holder)(s))
		c.Response().Header().Set(httpedge.HeaderRequestID, id)
		ctx, cancel := context.WithTimeout(req.Context(), s.cfg.RequestTimeout)
		defer cancel()
		c.SetRequest(req.WithContext(ctx))
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			if n := headerBytes(req); n > MaxHeaderBytes {
				c.Response().Header().Set(echo.HeaderConnection, "close")
				err = &httpError{status: http.StatusRequestHeaderFieldsTooLarge, code: "too_large",
					message: fmt.Sprintf("the request line and headers are %d bytes, more than %d", n, MaxHeaderBytes)}
				return
			}
			err = next(c)
		}()
		if err != nil {
			s.handleError(c, err)
		}
		route := c.Path()
		if route == "" || errors.Is(err, echo.ErrNotFound) || errors.Is(err, echo.ErrMethodNotAllowed) {
			route = "unmatched"
		}
		status := resp.Status
		el := time.Since(t0)
		s.requestsBy.get(routeCode{route, status}).Inc()
		s.latencyBy.get(route).Observe(el.Seconds())
		// Shed requests are counted, not logged: logging them would add work
		// exactly when there is too much.
		if s.cfg.AccessLog && !httpedge.Shed(c) {
			attrs := []slog.Attr{slog.String("request_id", id), slog.String("method", req.Method), slog.String("route", route),
				slog.String("path", req.URL.Path), slog.Int("status", status), slog.Int64("bytes", resp.Size),
				slog.Float64("duration_ms", float64(el.Microseconds())/1000), slog.String("remote", req.RemoteAddr)}
			if werr, ok := c.Get(keyWriteError).(error); ok {
				attrs = append(attrs, slog.String("write_error", werr.Error()))
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		}
		return nil
	}
}

// headerBytes is about what the request line and headers of r took on
// the wire.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n + len(r.Host) + 8
}

// validID accepts client request ids of 1 to 128 visible ASCII characters.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

func newID() string { return rand.Text() }
