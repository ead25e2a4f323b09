package casdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/internal/strictjson"
)

// batchForecast is one item of POST /emissions/forecasts/batch.
type batchForecast struct {
	RequestedAt *string `json:"requestedAt"`
	Location    *string `json:"location"`
	DataStartAt *string `json:"dataStartAt"`
	DataEndAt   *string `json:"dataEndAt"`
	WindowSize  *int32  `json:"windowSize"`
}

// forecastsBatch answers POST /emissions/forecasts/batch from the forecast
// store: for each item, the latest forecast issued at or before
// requestedAt (within Lookback), scoped and windowed as a current one.
// Without a forecast store it answers 400 (title NoForecastStore) once
// the body is valid.
func (a *API) forecastsBatch(c *echo.Context) error {
	items, err := decodeBatch[batchForecast](c, a.cfg.MaxLocations)
	if err != nil {
		return err
	}
	type req struct {
		forecastParams
		requestedAt time.Time
		place       place
	}
	reqs := make([]req, len(items))
	for i, it := range items {
		at := func(f string) string { return fmt.Sprintf("[%d].%s", i, f) }
		r := &reqs[i]
		var err error
		if it.RequestedAt == nil || strings.TrimSpace(*it.RequestedAt) == "" {
			return argument("Invalid parameters", map[string][]string{at("requestedAt"): {"requestedAt is not set"}})
		}
		if r.requestedAt, err = parseTime(*it.RequestedAt, at("requestedAt")); err != nil {
			return err
		}
		if it.Location == nil || strings.TrimSpace(*it.Location) == "" {
			return argument("Invalid parameters", map[string][]string{at("location"): {"location is not set"}})
		}
		r.location = strings.TrimSpace(*it.Location)
		if r.place, err = a.cat.resolve(r.location, at("location")); err != nil {
			return err
		}
		for _, b := range []struct {
			s   *string
			dst **time.Time
			f   string
		}{{it.DataStartAt, &r.dataStartAt, "dataStartAt"}, {it.DataEndAt, &r.dataEndAt, "dataEndAt"}} {
			if b.s == nil || strings.TrimSpace(*b.s) == "" {
				continue
			}
			t, err := parseTime(*b.s, at(b.f))
			if err != nil {
				return err
			}
			*b.dst = &t
		}
		if it.WindowSize != nil {
			if *it.WindowSize < 0 {
				return invalid(at("windowSize"), "windowSize must not be negative, got %d", *it.WindowSize)
			}
			w := int(*it.WindowSize)
			r.windowSize = &w
		}
		if err := r.check(); err != nil {
			return err
		}
	}
	if a.cfg.Forecasts == nil {
		// Not 501, the SDK's answer: a 4xx says the request cannot succeed
		// here, and no server error is left to chase.
		return &problem{Type: typeBadRequest, Title: "NoForecastStore", Status: http.StatusBadRequest,
			Detail: "carbongate keeps no past forecasts: start it with a forecast store (--store) that a backfill has filled to answer /emissions/forecasts/batch"}
	}
	ctx := c.Request().Context()
	out := make([]emissionsForecastDTO, 0, len(reqs))
	var prov []string
	for i, r := range reqs {
		rows, err := a.issued(ctx, r.place.Zone, r.requestedAt)
		if err != nil {
			return toProblem(err, fmt.Sprintf("[%d].requestedAt", i))
		}
		if len(rows) == 0 {
			return invalid(fmt.Sprintf("[%d].requestedAt", i), "no forecast of zone %s (location %s) was issued in the %v up to %s",
				r.place.Zone, r.location, a.cfg.Lookback, stamp(r.requestedAt))
		}
		s := forecast.Series{Start: rows[0].TargetTime}
		for _, row := range rows {
			if !row.TargetTime.Equal(s.End()) {
				break // a gap: the SDK's windowing needs continuous data
			}
			s.Values = append(s.Values, row.Value)
		}
		dto, err := r.answer(s, rows[0].IssuedAt, r.requestedAt)
		if err != nil {
			return err
		}
		out = append(out, dto)
		prov = append(prov, provenance(r.place, "forecast-store", rows[0].ModelName, rows[0].ModelVersion, rows[0].IssuedAt))
	}
	c.Response().Header().Set(HeaderProvenance, strings.Join(prov, ", "))
	return c.JSON(http.StatusOK, out)
}

// issued returns the rows of the latest forecast of zone issued at or
// before at (and at most Lookback before it), by target time; of several
// models issued at that time, the first by name and version.
func (a *API) issued(ctx context.Context, zone forecast.Zone, at time.Time) ([]store.ForecastRow, error) {
	var best, cur []store.ForecastRow
	keep := func() {
		if len(cur) > 0 && (len(best) == 0 || cur[0].IssuedAt.After(best[0].IssuedAt)) {
			best = cur
		}
		cur = nil
	}
	err := a.cfg.Forecasts.ReadForecasts(ctx, store.ForecastQuery{
		Zones: []forecast.Zone{zone}, Signal: a.cfg.Signal,
		IssuedFrom: at.Add(-a.cfg.Lookback), IssuedTo: at.Add(time.Nanosecond),
	}, func(r store.ForecastRow) error {
		if len(cur) > 0 && (r.ModelName != cur[0].ModelName || r.ModelVersion != cur[0].ModelVersion || !r.IssuedAt.Equal(cur[0].IssuedAt)) {
			keep()
		}
		if !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0) {
			cur = append(cur, r)
		}
		return nil
	})
	keep()
	return best, err
}

// decodeBatch reads a JSON array of 1 to max objects of type T; unknown
// fields are refused, as the SDK's schemas allow none. Media types:
// application/json, text/json and application/*+json (the SDK's); an
// absent Content-Type is read as JSON.
func decodeBatch[T any](c *echo.Context, max int) ([]T, error) {
	req := c.Request()
	if ct := req.Header.Get(echo.HeaderContentType); ct != "" {
		mt := strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0]))
		if mt != "application/json" && mt != "text/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
			return nil, &problem{Title: "Unsupported Media Type", Status: http.StatusUnsupportedMediaType,
				Detail: "Content-Type must be application/json, text/json or application/*+json"}
		}
	}
	body, err := io.ReadAll(req.Body) // read whole, within its limit, by the server
	if err != nil {
		return nil, invalid("body", "the body could not be read: %v", err)
	}
	var items []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&items); err != nil || items == nil {
		return nil, invalid("body", "a non-empty JSON array of requests is required")
	}
	if dec.More() {
		return nil, invalid("body", "the body holds more than one JSON value")
	}
	if p, dup := strictjson.Duplicate(body); dup {
		return nil, invalid(p, "%s is given twice in one request: give each member once", p)
	}
	if len(items) == 0 {
		return nil, invalid("body", "the array of requests is empty")
	}
	if len(items) > max {
		return nil, invalid("body", "%d requests; at most %d", len(items), max)
	}
	out := make([]T, len(items))
	for i, it := range items {
		if b := bytes.TrimSpace(it); len(b) == 0 || b[0] != '{' {
			return nil, invalid(fmt.Sprintf("[%d]", i), "request %d must be a JSON object", i)
		}
		d := json.NewDecoder(bytes.NewReader(it))
		d.DisallowUnknownFields()
		if err := d.Decode(&out[i]); err != nil {
			field := fmt.Sprintf("[%d]", i)
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				field += "." + te.Field
			}
			return nil, invalid(field, "request %d is malformed: %v", i, err)
		}
	}
	return out, nil
}
