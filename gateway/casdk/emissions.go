package casdk

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
)

// observedHours returns the observed hours of p that overlap [start, end)
// (the hour holding start when start equals end), up to the hour holding
// now: later hours are not observed yet (the replay clock included).
// NaN marks an hour without a value.
func (a *API) observedHours(ctx context.Context, p place, start, end, now time.Time) ([]point, error) {
	from := forecast.HourFloor(start)
	to := forecast.HourFloor(end)
	if to.Before(end) || !start.Before(end) {
		to = to.Add(time.Hour)
	}
	if last := forecast.HourFloor(now).Add(time.Hour); to.After(last) {
		to = last
	}
	if !from.Before(to) {
		return nil, nil
	}
	s, err := a.cfg.Observed.Observed(ctx, p.Zone, a.cfg.Signal, from, to)
	if err != nil {
		return nil, err
	}
	return hourly(s.Start, s.Values), nil
}

// span checks a period's length against MaxHours, naming param.
func (a *API) span(start, end time.Time, param string) error {
	if end.Sub(start) > time.Duration(a.cfg.MaxHours)*time.Hour {
		return invalid(param, "the period %s to %s is longer than %d hours", stamp(start), stamp(end), a.cfg.MaxHours)
	}
	return nil
}

// emissions answers the bylocation routes: the observed hours of every
// location over [time, toTime] (time defaults to now, toTime to time),
// all of them or the lowest (every tie). No data is 204, as the SDK.
func (a *API) emissions(c *echo.Context, names []string, startParams, endParams []string, best bool) error {
	q := newQuery(c.QueryParams())
	if len(names) == 0 {
		return argument("Invalid parameters", map[string][]string{"location": {"location is not set"}})
	}
	if len(names) > a.cfg.MaxLocations {
		return invalid("location", "%d locations; at most %d", len(names), a.cfg.MaxLocations)
	}
	start, sp, err := q.time(startParams...)
	if err != nil {
		return err
	}
	end, ep, err := q.time(endParams...)
	if err != nil {
		return err
	}
	switch {
	case end != nil && start == nil:
		return argument("Invalid parameters", map[string][]string{sp: {sp + " must be defined if " + ep + " is defined"}})
	case end != nil && !start.Before(*end):
		return argument("Invalid parameters", map[string][]string{sp: {sp + " must be before " + ep}})
	}
	now := a.cfg.Service.Now().Now
	if start == nil {
		start = &now
	}
	if end == nil {
		end = start
	}
	if err := a.span(*start, *end, ep); err != nil {
		return err
	}
	places := make([]place, len(names))
	for i, n := range names {
		if places[i], err = a.cat.resolve(n, "location"); err != nil {
			return err
		}
	}
	var out []emissionsData
	var pts []point
	var prov []string
	for i, p := range places {
		hs, err := a.observedHours(c.Request().Context(), p, *start, *end, now)
		if err != nil {
			return toProblem(err, "location")
		}
		for _, h := range hs {
			if math.IsNaN(h.Value) {
				continue
			}
			out = append(out, emissionsData{Location: names[i], Time: stamp(h.Time), Rating: h.Value, Duration: timeSpan(h.Duration)})
			pts = append(pts, h)
		}
		prov = append(prov, provenance(p, a.cfg.ObservedSource, "", "", time.Time{}))
	}
	c.Response().Header().Set(HeaderProvenance, strings.Join(prov, ", "))
	if best {
		out = bestOf(out, pts)
	}
	if len(out) == 0 {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, out)
}

// bestOf keeps the entries of out whose point in pts (same index) has the
// lowest value, every tie.
func bestOf(out []emissionsData, pts []point) []emissionsData {
	lo := optimal(pts)
	if len(lo) == 0 {
		return nil
	}
	var kept []emissionsData
	for i, p := range pts {
		if p.Value == lo[0].Value {
			kept = append(kept, out[i])
		}
	}
	return kept
}

func (a *API) byLocation(c *echo.Context) error {
	q := newQuery(c.QueryParams())
	loc, _, err := q.one("location")
	if err != nil {
		return err
	}
	var names []string
	if loc != "" {
		names = []string{loc}
	}
	// The SDK's server reads time and toTime; its generated clients (the
	// exporter's) send startTime and endTime: both are accepted.
	return a.emissions(c, names, []string{"time", "startTime"}, []string{"toTime", "endTime"}, false)
}

func (a *API) byLocations(c *echo.Context) error {
	return a.emissions(c, newQuery(c.QueryParams()).names("location"), []string{"time"}, []string{"toTime"}, false)
}

func (a *API) byLocationsBest(c *echo.Context) error {
	return a.emissions(c, newQuery(c.QueryParams()).names("location"), []string{"time"}, []string{"toTime"}, true)
}

// averageParams are one average's parameters, each named for errors.
type averageParams struct {
	location, start, end string // values
	nLoc, nStart, nEnd   string // parameter names
}

// average answers GET /emissions/average-carbon-intensity.
func (a *API) average(c *echo.Context) error {
	q := newQuery(c.QueryParams())
	var ap averageParams
	var err error
	if ap.location, ap.nLoc, err = q.one("location"); err != nil {
		return err
	}
	if ap.start, ap.nStart, err = q.one("startTime"); err != nil {
		return err
	}
	if ap.end, ap.nEnd, err = q.one("endTime"); err != nil {
		return err
	}
	dto, prov, err := a.averageOf(c.Request().Context(), ap)
	if err != nil {
		return err
	}
	c.Response().Header().Set(HeaderProvenance, prov)
	return c.JSON(http.StatusOK, dto)
}

// averageOf is the time-weighted mean of a location's observed values
// over [start, end): every hour of it must be observed (the SDK refuses a
// period its data do not cover, 400).
func (a *API) averageOf(ctx context.Context, ap averageParams) (carbonIntensityDTO, string, error) {
	errs := map[string][]string{}
	for _, p := range [][2]string{{ap.location, ap.nLoc}, {ap.start, ap.nStart}, {ap.end, ap.nEnd}} {
		if p[0] == "" {
			errs[p[1]] = []string{p[1] + " is not set"}
		}
	}
	if len(errs) > 0 {
		return carbonIntensityDTO{}, "", argument("Invalid parameters", errs)
	}
	start, err := parseTime(ap.start, ap.nStart)
	if err != nil {
		return carbonIntensityDTO{}, "", err
	}
	end, err := parseTime(ap.end, ap.nEnd)
	if err != nil {
		return carbonIntensityDTO{}, "", err
	}
	if !start.Before(end) {
		return carbonIntensityDTO{}, "", argument("Invalid parameters", map[string][]string{ap.nStart: {ap.nStart + " must be before " + ap.nEnd}})
	}
	if err := a.span(start, end, ap.nEnd); err != nil {
		return carbonIntensityDTO{}, "", err
	}
	p, err := a.cat.resolve(ap.location, ap.nLoc)
	if err != nil {
		return carbonIntensityDTO{}, "", err
	}
	now := a.cfg.Service.Now().Now
	hs, err := a.observedHours(ctx, p, start, end, now)
	if err != nil {
		return carbonIntensityDTO{}, "", toProblem(err, ap.nLoc)
	}
	for i, h := range hs {
		if math.IsNaN(h.Value) {
			hs = hs[:i] // the data end at the first missing hour
			break
		}
	}
	v, ok := averageOverPeriod(hs, start, end)
	if !ok {
		return carbonIntensityDTO{}, "", argument(fmt.Sprintf("Period out of range. Data points did not cover the requested average period: %s through %s", stamp(start), stamp(end)),
			map[string][]string{ap.nStart: {fmt.Sprintf("no observed value of %s (zone %s) for every hour of %s to %s (observed data end at %s, the current time)", ap.location, p.Zone, stamp(start), stamp(end), stamp(now))}})
	}
	return carbonIntensityDTO{Location: ap.location, StartTime: stamp(start), EndTime: stamp(end), CarbonIntensity: v},
		provenance(p, a.cfg.ObservedSource, "", "", time.Time{}), nil
}

// batchAverage is one item of POST /emissions/average-carbon-intensity/batch.
type batchAverage struct {
	Location  *string `json:"location"`
	StartTime *string `json:"startTime"`
	EndTime   *string `json:"endTime"`
}

// averageBatch answers POST /emissions/average-carbon-intensity/batch:
// each item as GET /emissions/average-carbon-intensity, errors naming the
// item ([2].startTime). Items may name different locations.
func (a *API) averageBatch(c *echo.Context) error {
	items, err := decodeBatch[batchAverage](c, a.cfg.MaxLocations)
	if err != nil {
		return err
	}
	out := make([]carbonIntensityDTO, 0, len(items))
	var prov []string
	for i, it := range items {
		at := func(f string) string { return fmt.Sprintf("[%d].%s", i, f) }
		deref := func(s *string) string {
			if s == nil {
				return ""
			}
			return strings.TrimSpace(*s)
		}
		dto, pv, err := a.averageOf(c.Request().Context(), averageParams{
			location: deref(it.Location), start: deref(it.StartTime), end: deref(it.EndTime),
			nLoc: at("location"), nStart: at("startTime"), nEnd: at("endTime"),
		})
		if err != nil {
			return err
		}
		out = append(out, dto)
		prov = append(prov, pv)
	}
	c.Response().Header().Set(HeaderProvenance, strings.Join(prov, ", "))
	return c.JSON(http.StatusOK, out)
}

// locations answers GET /locations: every name listed once (Azure
// regions, zone ids, other providers' regions bare or provider:region).
func (a *API) locations(c *echo.Context) error {
	if len(a.cat.list) == 0 {
		return c.NoContent(http.StatusNoContent)
	}
	out := make(map[string]locationDTO, len(a.cat.list))
	for _, p := range a.cat.list {
		l := locationDTO{Name: p.Name}
		if a.cfg.Coordinates != nil && p.Provider != "" {
			if lat, lon, ok := a.cfg.Coordinates(p.Provider, p.Region); ok {
				l.Latitude, l.Longitude = &lat, &lon
			}
		}
		out[p.Name] = l
	}
	return c.JSON(http.StatusOK, out)
}
