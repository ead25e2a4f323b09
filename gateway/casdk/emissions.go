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
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// periodHours is the hours [from, to) that cover [start, end) (the hour
// holding start when start equals end).
func periodHours(start, end time.Time) (from, to time.Time) {
	from, to = forecast.HourFloor(start), forecast.HourFloor(end)
	if to.Before(end) || !start.Before(end) {
		to = to.Add(time.Hour)
	}
	return from, to
}

// observed returns the observed hours of p over periodHours(start, end),
// up to the hour holding now: later hours are not observed yet (the
// replay clock included). NaN marks an hour without a value.
func (a *API) observed(ctx context.Context, p place, start, end, now time.Time) (forecast.Series, error) {
	from, to := periodHours(start, end)
	if last := forecast.HourFloor(now).Add(time.Hour); to.After(last) {
		to = last
	}
	if !from.Before(to) {
		return forecast.Series{Start: from}, nil
	}
	return a.cfg.Observed.Observed(ctx, p.Zone, a.cfg.Signal, from, to)
}

// observedHours is observed as points.
func (a *API) observedHours(ctx context.Context, p place, start, end, now time.Time) ([]point, error) {
	s, err := a.observed(ctx, p, start, end, now)
	return hourly(s.Start, s.Values), err
}

// span checks a period's length against MaxHours, naming param.
func (a *API) span(start, end time.Time, param string) error {
	if end.Sub(start) > time.Duration(a.cfg.MaxHours)*time.Hour {
		return invalid(param, "the period %s to %s is longer than %d hours", stamp(start), stamp(end), a.cfg.MaxHours)
	}
	return nil
}

// bytesPerHour is what an answer holds per location and hour while it is
// read: one float64.
const bytesPerHour = 8

// emissions answers the bylocation routes: the observed hours of every
// location over [time, toTime] (time defaults to now, toTime to time),
// all of them or the lowest (every tie). No data is 204, as the SDK.
//
// The work is bounded: a location given twice is read once, and the
// locations × hours of the period are at most MaxPoints (a 400 naming
// location and the end parameter beyond). What is read is held against
// the server's body budget (httpedge.Hold; 503 when it is spent); the
// answer is streamed, never built whole; and the reading stops once the
// request's context is done.
func (a *API) emissions(c *echo.Context, q query, names []string, startParams, endParams []string, best bool) error {
	if len(names) == 0 {
		return argument("Invalid parameters", map[string][]string{"location": {"location is not set"}})
	}
	names, places, err := a.cat.distinct(names, a.cfg.MaxLocations, "location")
	if err != nil {
		return err
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
	from, to := periodHours(*start, *end)
	hours := int(to.Sub(from) / time.Hour)
	if n := len(places) * hours; n > a.cfg.MaxPoints {
		msg := fmt.Sprintf("%d locations × %d hours of %s to %s are %d hourly values; at most %d a request: ask fewer locations or a shorter period",
			len(places), hours, stamp(*start), stamp(*end), n, a.cfg.MaxPoints)
		return argument("Invalid parameters", map[string][]string{"location": {msg}, ep: {msg}})
	}
	release, err := httpedge.Hold(c, int64(len(places)*hours)*bytesPerHour)
	if err != nil {
		return err
	}
	defer release()
	ctx := c.Request().Context()
	locs := make([]located, len(places))
	prov := make([]string, len(places))
	lowest, any := math.Inf(1), false
	for i, p := range places {
		if err := ctx.Err(); err != nil {
			return err
		}
		s, err := a.observed(ctx, p, *start, *end, now)
		if err != nil {
			return toProblem(err, "location")
		}
		locs[i] = located{name: names[i], s: s}
		for _, v := range s.Values {
			if known(v) {
				lowest, any = min(lowest, v), true
			}
		}
		prov[i] = provenance(p, a.cfg.ObservedSource, "", "", time.Time{})
	}
	c.Response().Header().Set(HeaderProvenance, strings.Join(prov, ", "))
	if !any {
		return c.NoContent(http.StatusNoContent)
	}
	keep := func(float64) bool { return true }
	if best {
		keep = func(v float64) bool { return v == lowest }
	}
	return writeEmissions(ctx, c, locs, keep)
}

func (a *API) byLocation(c *echo.Context) error {
	q, err := newQuery(c)
	if err != nil {
		return err
	}
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
	return a.emissions(c, q, names, []string{"time", "startTime"}, []string{"toTime", "endTime"}, false)
}

func (a *API) byLocations(c *echo.Context) error { return a.byLocationsOf(c, false) }

func (a *API) byLocationsBest(c *echo.Context) error { return a.byLocationsOf(c, true) }

func (a *API) byLocationsOf(c *echo.Context, best bool) error {
	q, err := newQuery(c)
	if err != nil {
		return err
	}
	return a.emissions(c, q, q.names("location"), []string{"time"}, []string{"toTime"}, best)
}

// averageParams are one average's parameters, each named for errors;
// check fills in the rest.
type averageParams struct {
	location, start, end string // values
	nLoc, nStart, nEnd   string // parameter names

	from, to time.Time // the period, parsed
	place    place
}

// average answers GET /emissions/average-carbon-intensity.
func (a *API) average(c *echo.Context) error {
	q, err := newQuery(c)
	if err != nil {
		return err
	}
	var ap averageParams
	if ap.location, ap.nLoc, err = q.one("location"); err != nil {
		return err
	}
	if ap.start, ap.nStart, err = q.one("startTime"); err != nil {
		return err
	}
	if ap.end, ap.nEnd, err = q.one("endTime"); err != nil {
		return err
	}
	left := a.cfg.MaxPoints
	if err := a.checkAverage(&ap, &left); err != nil {
		return err
	}
	dto, prov, err := a.averageOf(c.Request().Context(), ap)
	if err != nil {
		return err
	}
	c.Response().Header().Set(HeaderProvenance, prov)
	return c.JSON(http.StatusOK, dto)
}

// checkAverage validates an average's parameters and fills in its period
// and place. The hours of the period are taken from *left, the hours the
// request may still read: beyond, a 400 naming the end.
func (a *API) checkAverage(ap *averageParams, left *int) error {
	errs := map[string][]string{}
	for _, p := range [][2]string{{ap.location, ap.nLoc}, {ap.start, ap.nStart}, {ap.end, ap.nEnd}} {
		if p[0] == "" {
			errs[p[1]] = []string{p[1] + " is not set"}
		}
	}
	if len(errs) > 0 {
		return argument("Invalid parameters", errs)
	}
	var err error
	if ap.from, err = parseTime(ap.start, ap.nStart); err != nil {
		return err
	}
	if ap.to, err = parseTime(ap.end, ap.nEnd); err != nil {
		return err
	}
	if !ap.from.Before(ap.to) {
		return argument("Invalid parameters", map[string][]string{ap.nStart: {ap.nStart + " must be before " + ap.nEnd}})
	}
	if err := a.span(ap.from, ap.to, ap.nEnd); err != nil {
		return err
	}
	from, to := periodHours(ap.from, ap.to)
	if *left -= int(to.Sub(from) / time.Hour); *left < 0 {
		return invalid(ap.nEnd, "the periods of the request add up to more than %d hours: ask fewer or shorter ones", a.cfg.MaxPoints)
	}
	ap.place, err = a.cat.resolve(ap.location, ap.nLoc)
	return err
}

// averageOf is the time-weighted mean of a location's observed values
// over the period of ap (checked): every hour of it must be observed (the
// SDK refuses a period its data do not cover, 400).
func (a *API) averageOf(ctx context.Context, ap averageParams) (carbonIntensityDTO, string, error) {
	start, end, p := ap.from, ap.to, ap.place
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
// item ([2].startTime). Items may name different locations; every item is
// checked before any is read.
func (a *API) averageBatch(c *echo.Context) error {
	items, err := decodeBatch[batchAverage](c, a.cfg.MaxLocations)
	if err != nil {
		return err
	}
	aps := make([]averageParams, len(items))
	left := a.cfg.MaxPoints
	for i, it := range items {
		at := func(f string) string { return fmt.Sprintf("[%d].%s", i, f) }
		deref := func(s *string) string {
			if s == nil {
				return ""
			}
			return strings.TrimSpace(*s)
		}
		aps[i] = averageParams{location: deref(it.Location), start: deref(it.StartTime), end: deref(it.EndTime),
			nLoc: at("location"), nStart: at("startTime"), nEnd: at("endTime")}
		if err := a.checkAverage(&aps[i], &left); err != nil {
			return err
		}
	}
	out := make([]carbonIntensityDTO, 0, len(items))
	var prov []string
	ctx := c.Request().Context()
	for _, ap := range aps {
		if err := ctx.Err(); err != nil {
			return err
		}
		dto, pv, err := a.averageOf(ctx, ap)
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
