// Package casdk serves the Green Software Foundation Carbon Aware SDK's
// Web API (v1) from carbongate, so that the SDK's clients (its generated
// Java, NPM and Go clients, Azure's carbon-intensity exporter) work against
// carbongate unchanged:
//
//	GET  /emissions/forecasts/current          carbongate's current forecasts (fallback chain)
//	POST /emissions/forecasts/batch            forecasts as issued in the past (the forecast store)
//	GET  /emissions/bylocation                 observed hours of one location
//	GET  /emissions/bylocations                observed hours of several locations
//	GET  /emissions/bylocations/best           the lowest of them, every tie
//	GET  /emissions/average-carbon-intensity   the time-weighted mean over a period (+ POST …/batch)
//	GET  /locations                            the location names accepted
//
// Shapes, parameters and windowing follow the SDK's server: camelCase
// JSON, windowSize as the SDK's rolling time-weighted average advancing
// one data point at a time, dataStartAt/dataEndAt as its bounds, every tied
// optimum returned, errors as ASP.NET's ValidationProblemDetails naming the
// parameter. Where each answer came from is in the Carbongate-Provenance
// header (the SDK's shapes have no field for it).
package casdk

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// DefaultPrefix is where the API is served unless configured otherwise:
// an SDK client's base URL is http://<carbongate>/casdk.
const DefaultPrefix = "/casdk"

// HeaderProvenance carries, per location of an answer, where its data came
// from: a comma-separated list of entries like
//
//	location="eastus"; zone="US-MIDA-PJM"; source="zone"; model="carbon-forecaster-US-MIDA-PJM"; version="3"; issued_at="2021-06-01T00:00:00Z"
//
// source is the fallback step of a current forecast (zone, generic,
// baseline, climatology, or a remote step), "forecast-store" for a batch
// forecast, or the observed data's origin (Config.ObservedSource) for
// observed values and averages.
const HeaderProvenance = "Carbongate-Provenance"

// Limits of a request.
const (
	DefaultMaxHours     = 366 * 24 // observed hours one location may span
	DefaultMaxLocations = 100      // locations of one request, items of one batch
	// DefaultMaxPoints bounds the locations × hours of one request: 100
	// locations over a month of 31 days, or 8 over a whole year (an answer of
	// about 7 MB at most: 6.5 MB for 8 bundled zones over a year).
	DefaultMaxPoints = DefaultMaxLocations * 31 * 24
	DefaultLookback  = 7 * 24 * time.Hour
)

// Service is what the API needs of the gateway; *gateway.Service
// implements it.
type Service interface {
	Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (forecast.Forecast, gateway.Reading, error)
	Zones() []gateway.ZoneInfo
	Now() gateway.Reading
}

var _ Service = (*gateway.Service)(nil)

// Observed gives observed hourly values over [from, to), NaN where none
// is known; store.Observed and history.Tables implement it.
type Observed interface {
	Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error)
}

// Forecasts reads forecasts as they were issued; store.Forecasts
// implements it.
type Forecasts interface {
	ReadForecasts(ctx context.Context, q store.ForecastQuery, fn func(store.ForecastRow) error) error
}

// Config configures an API.
type Config struct {
	Service  Service  // required
	Observed Observed // required
	// ObservedSource names the observed data in provenance, e.g. "store"
	// or "bundled".
	ObservedSource string
	// Forecasts, when set, answers /emissions/forecasts/batch; nil: that
	// route answers 501 saying why.
	Forecasts Forecasts
	// Coordinates gives /locations its latitudes and longitudes; nil: null.
	Coordinates Coordinates
	// Unserved, when set, says why a cloud region that /locations does not
	// list is not served although it is real (it maps to no zone, or to a
	// zone without data), and "" for a name it does not know; the answer is
	// then a 400 saying so instead of "unknown location".
	Unserved func(provider, region string) string
	// Prefixes are the path prefixes the API is served under ("" is the
	// root); at least one.
	Prefixes []string
	Signal   forecast.Signal // default lifecycle
	Logger   *slog.Logger    // nil: discard
	// MaxHours bounds the observed hours one location may span; 0:
	// DefaultMaxHours.
	MaxHours int
	// MaxLocations bounds the locations of a request and the items of a
	// batch; 0: DefaultMaxLocations.
	MaxLocations int
	// MaxPoints bounds the hourly values one request reads: the distinct
	// locations × the hours of the period of /emissions/bylocations (and
	// …/best), the sum over the items of an average batch; 0:
	// DefaultMaxPoints.
	MaxPoints int
	// Lookback is how far before requestedAt a batch forecast is looked
	// for; 0: DefaultLookback.
	Lookback time.Duration
}

// API serves the Carbon Aware SDK's routes.
type API struct {
	cfg Config
	log *slog.Logger
	cat *catalog
}

// New validates cfg and returns the API.
func New(cfg Config) (*API, error) {
	if cfg.Service == nil || cfg.Observed == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "casdk: Service and Observed are required")
	}
	if len(cfg.Prefixes) == 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "casdk: at least one prefix is required")
	}
	for _, p := range cfg.Prefixes {
		if err := CheckPrefix(p); err != nil {
			return nil, err
		}
	}
	if cfg.Signal == "" {
		cfg.Signal = forecast.SignalLifecycle
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxHours <= 0 {
		cfg.MaxHours = DefaultMaxHours
	}
	if cfg.MaxLocations <= 0 {
		cfg.MaxLocations = DefaultMaxLocations
	}
	if cfg.MaxPoints <= 0 {
		cfg.MaxPoints = DefaultMaxPoints
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = DefaultLookback
	}
	return &API{cfg: cfg, log: cfg.Logger, cat: newCatalog(cfg.Service.Zones(), cfg.Unserved)}, nil
}

// CheckPrefix accepts "" (the root) or /segment[/segment…] without a
// trailing slash.
func CheckPrefix(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "?#:* ") || strings.Contains(p, "//") {
		return forecast.FieldErrorf(forecast.EINVALID, "prefix", "casdk: prefix %q must be like /casdk (a leading slash, none at the end), or empty for the root", p)
	}
	return nil
}

// routes are the API's routes below a prefix.
var routes = []struct{ method, path string }{
	{http.MethodGet, "/emissions/forecasts/current"},
	{http.MethodPost, "/emissions/forecasts/batch"},
	{http.MethodGet, "/emissions/bylocation"},
	{http.MethodGet, "/emissions/bylocations"},
	{http.MethodGet, "/emissions/bylocations/best"},
	{http.MethodGet, "/emissions/average-carbon-intensity"},
	{http.MethodPost, "/emissions/average-carbon-intensity/batch"},
	{http.MethodGet, "/locations"},
}

// Register adds the routes under every prefix to e.
func (a *API) Register(e *echo.Echo) {
	handlers := map[string]func(*echo.Context) error{
		"/emissions/forecasts/current":              a.forecastsCurrent,
		"/emissions/forecasts/batch":                a.forecastsBatch,
		"/emissions/bylocation":                     a.byLocation,
		"/emissions/bylocations":                    a.byLocations,
		"/emissions/bylocations/best":               a.byLocationsBest,
		"/emissions/average-carbon-intensity":       a.average,
		"/emissions/average-carbon-intensity/batch": a.averageBatch,
		"/locations":                                a.locations,
	}
	for _, p := range a.cfg.Prefixes {
		for _, r := range routes {
			e.Add(r.method, p+r.path, a.handle(handlers[r.path]))
			e.Any(p+r.path, a.handle(methodNotAllowed(r.method)))
		}
		if p != "" { // at the root, unknown paths are the server's
			e.Any(p+"/*", a.handle(notFound))
		}
	}
}

// Routes are the server settings of the API's paths: errors the server
// raises for them (413, 431, overload) are written as the SDK's error
// document.
func (a *API) Routes() []httpedge.Route {
	var out []httpedge.Route
	for _, p := range a.cfg.Prefixes {
		prefixes := []string{p + "/"}
		if p == "" {
			prefixes = []string{"/emissions/", "/locations"}
		}
		for _, pp := range prefixes {
			out = append(out, httpedge.Route{Prefix: pp, Render: render})
		}
	}
	return out
}

// emissionsDataDTO is a forecast point: duration in minutes.
type emissionsDataDTO struct {
	Location  string  `json:"location"`
	Timestamp string  `json:"timestamp"`
	Duration  int     `json:"duration"`
	Value     float64 `json:"value"`
}

// emissionsForecastDTO is one location's forecast.
type emissionsForecastDTO struct {
	GeneratedAt       string             `json:"generatedAt"`
	RequestedAt       string             `json:"requestedAt"`
	Location          string             `json:"location"`
	DataStartAt       string             `json:"dataStartAt"`
	DataEndAt         string             `json:"dataEndAt"`
	WindowSize        int                `json:"windowSize"`
	OptimalDataPoints []emissionsDataDTO `json:"optimalDataPoints"`
	ForecastData      []emissionsDataDTO `json:"forecastData"`
}

// emissionsData is an observed point: duration as a .NET TimeSpan.
type emissionsData struct {
	Location string  `json:"location"`
	Time     string  `json:"time"`
	Rating   float64 `json:"rating"`
	Duration string  `json:"duration"`
}

type carbonIntensityDTO struct {
	Location        string  `json:"location"`
	StartTime       string  `json:"startTime"`
	EndTime         string  `json:"endTime"`
	CarbonIntensity float64 `json:"carbonIntensity"`
}

type locationDTO struct {
	Latitude  *float64 `json:"latitude"`
	Longitude *float64 `json:"longitude"`
	Name      string   `json:"name"`
}

// forecastParams are the parameters of one forecast, current or batch.
type forecastParams struct {
	location               string
	dataStartAt, dataEndAt *time.Time
	windowSize             *int
}

// forecastsCurrent answers GET /emissions/forecasts/current.
func (a *API) forecastsCurrent(c *echo.Context) error {
	q, err := newQuery(c)
	if err != nil {
		return err
	}
	names := q.names("location")
	if len(names) == 0 {
		return argument("Invalid parameters", map[string][]string{"location": {"location is not set"}})
	}
	names, places, err := a.cat.distinct(names, a.cfg.MaxLocations, "location")
	if err != nil {
		return err
	}
	var fp forecastParams
	if fp.dataStartAt, _, err = q.time("dataStartAt"); err != nil {
		return err
	}
	if fp.dataEndAt, _, err = q.time("dataEndAt"); err != nil {
		return err
	}
	ws, _, err := q.one("windowSize")
	if err != nil {
		return err
	}
	if ws == "" && q.present("windowSize") {
		return invalid("windowSize", "windowSize is given empty: want a whole number of minutes")
	}
	if fp.windowSize, err = windowSize(ws, "windowSize"); err != nil {
		return err
	}
	if err := fp.check(); err != nil {
		return err
	}
	ctx := c.Request().Context()
	out := make([]emissionsForecastDTO, 0, len(names))
	var prov []string
	for i, p := range places {
		if err := ctx.Err(); err != nil {
			return err
		}
		fc, now, err := a.cfg.Service.Forecast(ctx, p.Zone, a.cfg.Signal)
		if err != nil {
			return toProblem(err, "location")
		}
		fp.location = names[i]
		dto, err := fp.answer(fc.Series, fc.Provenance.IssuedAt, now.Now)
		if err != nil {
			return err
		}
		out = append(out, dto)
		pv := fc.Provenance
		prov = append(prov, provenance(p, string(pv.Source), pv.Model, pv.Version, pv.IssuedAt))
	}
	c.Response().Header().Set(HeaderProvenance, strings.Join(prov, ", "))
	return c.JSON(http.StatusOK, out)
}

// check applies the SDK's parameter validation: dataStartAt before
// dataEndAt when both are given.
func (fp forecastParams) check() error {
	if fp.dataStartAt != nil && fp.dataEndAt != nil && !fp.dataStartAt.Before(*fp.dataEndAt) {
		return argument("Invalid parameters", map[string][]string{"dataStartAt": {"dataStartAt must be before dataEndAt"}})
	}
	return nil
}

// answer scopes an hourly forecast to the parameters and windows it as
// the SDK does. Bounds outside the forecast are a 400 naming them.
func (fp forecastParams) answer(s forecast.Series, generatedAt, requestedAt time.Time) (emissionsForecastDTO, error) {
	data := hourly(s.Start, s.Values)
	if len(data) == 0 {
		return emissionsForecastDTO{}, unavailable("the forecast of " + fp.location + " is empty")
	}
	minT, maxT := data[0].Time, data[len(data)-1].end()
	start, end := minT, maxT
	if fp.dataStartAt != nil {
		start = *fp.dataStartAt
	}
	if fp.dataEndAt != nil {
		end = *fp.dataEndAt
	}
	errs := map[string][]string{}
	if !start.Before(end) {
		errs["dataStartAt"] = append(errs["dataStartAt"], "dataStartAt must be earlier than dataEndAt")
	}
	if start.Before(minT) || start.After(maxT) {
		errs["dataStartAt"] = append(errs["dataStartAt"], fmt.Sprintf("dataStartAt must be within time range of the forecasted data, '%s' through '%s'", stamp(minT), stamp(maxT)))
	}
	if end.Before(minT) || end.After(maxT) {
		errs["dataEndAt"] = append(errs["dataEndAt"], fmt.Sprintf("dataEndAt must be within time range of the forecasted data, '%s' through '%s'", stamp(minT), stamp(maxT)))
	}
	if len(errs) > 0 {
		return emissionsForecastDTO{}, argument("Invalid EmissionsForecast", errs)
	}
	var window time.Duration
	if fp.windowSize != nil {
		// Beyond about eight years no forecast holds a window; the cap
		// keeps the duration from overflowing.
		window = time.Duration(min(*fp.windowSize, 1<<22)) * time.Minute
	}
	rolled := rollingAverage(filterByDuration(data, start, end), window, start, end)
	if generatedAt.IsZero() {
		generatedAt = s.Start
	}
	dto := emissionsForecastDTO{
		GeneratedAt: stamp(generatedAt), RequestedAt: stamp(requestedAt), Location: fp.location,
		DataStartAt: stamp(start), DataEndAt: stamp(end),
		OptimalDataPoints: fp.points(optimal(rolled)), ForecastData: fp.points(rolled),
	}
	// As the SDK: the bounds not given are those of the answer's points.
	if len(rolled) > 0 {
		if fp.dataStartAt == nil {
			dto.DataStartAt = stamp(rolled[0].Time)
		}
		if fp.dataEndAt == nil {
			dto.DataEndAt = stamp(rolled[len(rolled)-1].Time)
		}
	}
	if fp.windowSize != nil {
		dto.WindowSize = *fp.windowSize
	}
	return dto, nil
}

func (fp forecastParams) points(ps []point) []emissionsDataDTO {
	out := make([]emissionsDataDTO, len(ps))
	for i, p := range ps {
		out[i] = emissionsDataDTO{Location: fp.location, Timestamp: stamp(p.Time), Duration: int(p.Duration / time.Minute), Value: p.Value}
	}
	return out
}

// provenance formats one entry of HeaderProvenance.
func provenance(p place, source, model, version string, issued time.Time) string {
	var b strings.Builder
	item := func(k, v string) {
		if v == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(k + "=" + quote(v))
	}
	item("location", p.Name)
	item("zone", string(p.Zone))
	item("source", source)
	item("model", model)
	item("version", version)
	if !issued.IsZero() {
		item("issued_at", stamp(issued))
	}
	return b.String()
}

// quote makes v a structured-field string: printable ASCII, with " and \
// escaped.
func quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		default:
			b.WriteByte('?')
		}
	}
	b.WriteByte('"')
	return b.String()
}

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI fragment ({"paths", "components"}) that
// describes the routes under prefixes, to merge into the server's
// document. Operation ids of the second and later prefixes get the
// prefix as a suffix, so that they stay unique.
func OpenAPI(prefixes []string) ([]byte, error) {
	var frag struct {
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components json.RawMessage                      `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &frag); err != nil {
		return nil, fmt.Errorf("casdk: OpenAPI fragment: %w", err)
	}
	paths := map[string]map[string]map[string]any{}
	for i, p := range prefixes {
		suffix := ""
		if i > 0 {
			suffix = "_" + strings.NewReplacer("/", "_", "-", "_", ".", "_").Replace(cmp.Or(strings.TrimPrefix(p, "/"), "root"))
		}
		for path, ops := range frag.Paths {
			out := map[string]map[string]any{}
			for method, op := range ops {
				o := maps.Clone(op)
				o["operationId"] = fmt.Sprint(op["operationId"]) + suffix
				out[method] = o
			}
			paths[p+path] = out
		}
	}
	return json.Marshal(map[string]any{"paths": paths, "components": frag.Components})
}
