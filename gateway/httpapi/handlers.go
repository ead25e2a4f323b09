package httpapi

// The route handlers: the scheduling API, probes and the OpenAPI document.

import (
	"mime"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

func (s *Server) schedule(c *echo.Context) error {
	req := c.Request()
	ct := req.Header.Get(echo.HeaderContentType)
	mt, err := ct, error(nil)
	if ct != echo.MIMEApplicationJSON { // the usual case needs no parsing
		mt, _, err = mime.ParseMediaType(ct)
	}
	if err != nil || mt != echo.MIMEApplicationJSON {
		return &httpError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
			message: "Content-Type must be application/json"}
	}
	body, _ := httpedge.Body(c) // read by the body middleware; none: empty
	r, err := DecodeScheduleRequest(body)
	if err != nil {
		return err
	}
	d, err := s.cfg.Service.Schedule(req.Context(), r)
	if err != nil {
		return err
	}
	for _, p := range d.Provenance {
		s.sourcesBy.get(p.Source).Inc()
	}
	for _, c := range d.Capped {
		s.cappedBy.get(c.Zone).Inc()
	}
	out := scheduleResponse(d, c.Get(keyRequestID).(string))
	defer releaseSchedule(out)
	encode := appendSchedule
	if preferMinimal(req.Header) {
		encode = appendScheduleMinimal
		c.Response().Header().Set("Preference-Applied", "return=minimal")
	}
	bp := slicePool.Get().(*[]byte)
	b, err := encode((*bp)[:0], out)
	defer func() {
		if cap(b) <= 64<<10 {
			*bp = b
			slicePool.Put(bp)
		}
	}()
	if err != nil {
		return err
	}
	return writeBytes(c, http.StatusOK, b)
}

func (s *Server) forecast(c *echo.Context) error {
	q, err := singleQuery(c)
	if err != nil {
		return err
	}
	zs := q.Get("zone")
	if zs == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "query parameter zone is required")
	}
	zone, err := forecast.ParseZone(zs)
	if err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "%s", forecast.ErrorMessage(err))
	}
	sig, err := forecast.ParseAnySignal(q.Get("signal"))
	if err != nil {
		return forecast.FieldErrorf(forecast.EINVALID, "signal", "%s", forecast.ErrorMessage(err))
	}
	fc, now, err := s.cfg.Service.Forecast(c.Request().Context(), zone, sig)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, forecastResponse(fc, now, c.Get(keyRequestID).(string)))
}

func (s *Server) zones(c *echo.Context) error {
	zs := s.cfg.Service.Zones()
	out := api.Zones{Zones: make([]api.Zone, len(zs)), Clock: clockOf(s.cfg.Service.Now()), RequestID: c.Get(keyRequestID).(string)}
	for i, z := range zs {
		zj := api.Zone{Zone: string(z.Zone), History: z.History, Locations: make([]api.Location, len(z.Locations)),
			Forecasters: make(map[string]string, len(z.Forecasters))}
		if z.Climatology > 0 {
			v := z.Climatology
			zj.Climatology = &v
		}
		for j, l := range z.Locations {
			zj.Locations[j] = api.Location{Provider: l.Provider, Region: l.Region}
		}
		for sig, src := range z.Forecasters {
			zj.Forecasters[string(sig)] = string(src)
		}
		out.Zones[i] = zj
	}
	return writeJSON(c, http.StatusOK, out)
}

type statusBody struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

func (s *Server) healthz(c *echo.Context) error {
	return writeJSON(c, http.StatusOK, statusBody{Status: "ok"})
}

func (s *Server) readyz(c *echo.Context) error {
	if s.draining.Load() {
		return &httpError{status: http.StatusServiceUnavailable, code: forecast.EUNAVAILABLE, message: "draining", probe: true}
	}
	if why := s.saturated(); why != "" {
		return &httpError{status: http.StatusServiceUnavailable, code: forecast.EUNAVAILABLE, message: "saturated: " + why, probe: true}
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			return &httpError{status: http.StatusServiceUnavailable, code: forecast.EUNAVAILABLE, message: "not ready: " + forecast.ErrorMessage(err), probe: true}
		}
	}
	body := statusBody{Status: "ready"}
	if s.cfg.Checks != nil {
		body.Checks = s.cfg.Checks()
	}
	return writeJSON(c, http.StatusOK, body)
}

// saturated returns why the server would shed the next request, or "".
func (s *Server) saturated() string {
	// Not the body budget: it sheds only large bodies, and the server
	// still serves the others.
	return s.limiter.saturated()
}

func (s *Server) openapi(c *echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.openapiDoc)
}

// singleQuery parses the query string of a route whose parameters each
// take one value: malformed, or a parameter given twice, is EINVALID
// naming it (rather than the first value winning).
func singleQuery(c *echo.Context) (url.Values, error) {
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "query", "malformed query string: %s", forecast.Clip(err.Error(), 80))
	}
	for name, vs := range q {
		if len(vs) > 1 {
			name = forecast.Clip(name, 64)
			return nil, forecast.FieldErrorf(forecast.EINVALID, name, "query parameter %s is given %d times: give it once", name, len(vs))
		}
	}
	return q, nil
}
