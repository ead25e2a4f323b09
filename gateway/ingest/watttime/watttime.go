// Package watttime is a client of the WattTime API v3 (login, historical,
// forecast, region-from-loc) and an ingest.Source of the marginal signal
// over it.
//
// WattTime serves the marginal operating emissions rate (signal_type
// co2_moer) of its grid regions in 5-minute points, in lbs of CO2 per MWh.
// The client converts the values to gCO2/kWh (1 lb/MWh = 0.45359237
// g/kWh) and the Poller averages them into hours. Timestamps are read as
// RFC 3339 with any offset and returned in UTC; one without an offset is
// EINVALID.
//
// The client logs in with HTTP basic auth (GET /login) and sends the token
// it gets as a bearer token. A token lives 30 minutes: the client logs in
// again shortly before it expires, and once more when the API refuses it
// (401) before giving up. Neither the token nor the password is ever logged
// or put in an error.
package watttime

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/oip"
)

// Name is the source name in metrics, logs and rate limits.
const Name = "watttime"

// Defaults and limits of the API.
const (
	DefaultBaseURL = "https://api.watttime.org"
	DefaultTimeout = 20 * time.Second
	// SignalType is the WattTime signal the client asks for.
	SignalType = "co2_moer"
	// TokenLifetime is how long a login token is valid; the client logs
	// in again TokenMargin before.
	TokenLifetime = 30 * time.Minute
	TokenMargin   = time.Minute
	// MaxSpan is the longest range one historical request asks for (the
	// official client asks in chunks of 30 days).
	MaxSpan = 30 * 24 * time.Hour
	// MaxHorizon bounds the forecast's horizon_hours.
	MaxHorizon = 72
	// LbsPerMWh is the value in gCO2/kWh of 1 lb CO2/MWh (453.59237 g per
	// lb, 1000 kWh per MWh).
	LbsPerMWh = 0.45359237
)

// Config configures a Client.
type Config struct {
	Username string // required
	Password string // required; never logged
	// Regions maps the zones Fetch serves to WattTime regions, e.g.
	// "US-CAL-CISO" → "CAISO_NORTH".
	Regions map[forecast.Zone]string
	BaseURL string // default DefaultBaseURL
	// HTTPClient sends the requests (a copy that follows no redirect to
	// another host, ingest.SameHostRedirects); nil: a new http.Client.
	HTTPClient *http.Client
	// Timeout bounds each request, on top of the caller's deadline;
	// default DefaultTimeout.
	Timeout time.Duration
	// History is how far back the account may read historical data, as
	// Limits reports it to the Poller; 0: no limit.
	History time.Duration
	// AnswerBudget bounds the bytes of answers being read at once, shared
	// with the process's other vendor clients (ingest.Caller.Budget); nil:
	// one of this client's own (ingest.NewAnswerBudget).
	AnswerBudget *oip.BodyBudget
	Logger       *slog.Logger     // nil: discard
	Now          func() time.Time // token expiry and Retry-After dates; nil: time.Now
}

// LogValue keeps the credentials out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", c.BaseURL), slog.String("username", c.Username), slog.Int("regions", len(c.Regions)))
}

// secret is a token that prints redacted.
type secret string

func (secret) String() string        { return "[redacted]" }
func (secret) GoString() string      { return "[redacted]" }
func (secret) LogValue() slog.Value  { return slog.StringValue("[redacted]") }
func (s secret) bearer() http.Header { return http.Header{"Authorization": {"Bearer " + string(s)}} }

// Client calls the API. Safe for concurrent use.
type Client struct {
	cfg    Config
	base   *url.URL
	caller ingest.Caller
	log    *slog.Logger

	mu      sync.Mutex // serialises logins; guards token and expires
	token   secret
	expires time.Time
}

var _ ingest.Source = (*Client)(nil)

// New validates cfg and returns a Client; it makes no call (the first
// request logs in). EINVALID for missing credentials, a base URL that is
// not an absolute http(s) URL, or a zone or region that is not valid.
func New(cfg Config) (*Client, error) {
	if cfg.Username == "" || cfg.Password == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "credentials", "watttime: username and password are required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "base_url", "watttime: base URL %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	for z, r := range cfg.Regions {
		if pz, err := forecast.ParseZone(string(z)); err != nil || pz != z || strings.TrimSpace(r) == "" {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "regions", "watttime: zone %q → region %q: want an upper-case zone id and a region", z, r)
		}
	}
	if cfg.Timeout < 0 || cfg.History < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "timeout", "watttime: timeout and history must be ≥ 0")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.HTTPClient = ingest.SameHostRedirects(cfg.HTTPClient)
	if cfg.AnswerBudget == nil {
		cfg.AnswerBudget = ingest.NewAnswerBudget()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{
		cfg: cfg, base: base, log: cfg.Logger,
		caller: ingest.Caller{Source: Name, Client: cfg.HTTPClient, Timeout: cfg.Timeout, Now: cfg.Now, Budget: cfg.AnswerBudget},
	}, nil
}

// Name implements ingest.Source.
func (c *Client) Name() string { return Name }

// Limits implements ingest.Source: chunks of MaxSpan, back as far as
// Config.History.
func (c *Client) Limits() ingest.Limits {
	return ingest.Limits{History: c.cfg.History, MaxSpan: MaxSpan}
}

// Fetch implements ingest.Source for the marginal signal of the zones of
// Config.Regions (ENOTFOUND for other zones and signals): Historical of the
// zone's region.
func (c *Client) Fetch(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (ingest.Batch, error) {
	if signal != ingest.SignalMarginal {
		return ingest.Batch{}, forecast.FieldErrorf(forecast.ENOTFOUND, "signal", "watttime serves the marginal signal, not %q", signal)
	}
	region, ok := c.cfg.Regions[zone]
	if !ok {
		return ingest.Batch{}, forecast.FieldErrorf(forecast.ENOTFOUND, "zone", "watttime: no region is configured for zone %s", zone)
	}
	d, err := c.Historical(ctx, region, from, to)
	return d.Batch, err
}

// Data is the answer of the historical or forecast endpoint. Its points
// are in gCO2/kWh, UTC, sorted; Period is the data point period.
type Data struct {
	Region      string
	Model       string    // meta.model.date, when given
	GeneratedAt time.Time // forecasts: when WattTime made it
	Warnings    []string  // meta.warnings, as text
	ingest.Batch
}

// Historical returns the region's points with from ≤ point_time < to (at
// most MaxSpan): GET /v3/historical. EINVALID for an empty or too long
// range.
func (c *Client) Historical(ctx context.Context, region string, from, to time.Time) (Data, error) {
	const path = "/v3/historical"
	if region == "" || !from.Before(to) || to.Sub(from) > MaxSpan {
		return Data{}, forecast.Errorf(forecast.EINVALID, "watttime: historical range [%s, %s) of region %q must be non-empty and at most %v",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), region, MaxSpan)
	}
	q := url.Values{
		"region": {region}, "signal_type": {SignalType},
		"start": {from.UTC().Format(time.RFC3339)}, "end": {to.UTC().Format(time.RFC3339)},
	}
	d, err := c.data(ctx, path, q, region)
	d.Points, _ = ingest.Clip(d.Points, from, to)
	return d, err
}

// Forecast returns the region's latest forecast over horizonHours (1 to
// MaxHorizon; 0 lets the API choose, 24 h): GET /v3/forecast.
func (c *Client) Forecast(ctx context.Context, region string, horizonHours int) (Data, error) {
	const path = "/v3/forecast"
	if region == "" || horizonHours < 0 || horizonHours > MaxHorizon {
		return Data{}, forecast.FieldErrorf(forecast.EINVALID, "horizon", "watttime: forecast of region %q over %d h: want a region and 0–%d h", region, horizonHours, MaxHorizon)
	}
	q := url.Values{"region": {region}, "signal_type": {SignalType}}
	if horizonHours > 0 {
		q.Set("horizon_hours", strconv.Itoa(horizonHours))
	}
	return c.data(ctx, path, q, region)
}

// Region is a WattTime grid region.
type Region struct {
	Region   string
	FullName string
}

// RegionFromLoc returns the region of a location: GET /v3/region-from-loc.
// EINVALID for coordinates out of range, ENOTFOUND when WattTime covers no
// region there.
func (c *Client) RegionFromLoc(ctx context.Context, latitude, longitude float64) (Region, error) {
	const path = "/v3/region-from-loc"
	if !(math.Abs(latitude) <= 90) || !(math.Abs(longitude) <= 180) {
		return Region{}, forecast.Errorf(forecast.EINVALID, "watttime: latitude %v, longitude %v out of range", latitude, longitude)
	}
	q := url.Values{
		"latitude":    {strconv.FormatFloat(latitude, 'f', -1, 64)},
		"longitude":   {strconv.FormatFloat(longitude, 'f', -1, 64)},
		"signal_type": {SignalType},
	}
	var r struct {
		Region   string `json:"region"`
		FullName string `json:"region_full_name"`
	}
	if err := c.get(ctx, path, q, &r); err != nil {
		return Region{}, err
	}
	if r.Region == "" {
		return Region{}, forecast.Errorf(forecast.EINVALID, "watttime: answer to %s has no region", path)
	}
	return Region{Region: r.Region, FullName: r.FullName}, nil
}

// data gets a historical or forecast answer of region, converted, and
// logs its warnings.
func (c *Client) data(ctx context.Context, path string, q url.Values, region string) (Data, error) {
	var r response
	if err := c.get(ctx, path, q, &r); err != nil {
		return Data{}, err
	}
	d, err := r.convert(path, region)
	if err != nil {
		return Data{}, err
	}
	if len(d.Warnings) > 0 {
		c.log.LogAttrs(ctx, slog.LevelWarn, "watttime: the answer carries warnings",
			slog.String("path", path), slog.String("region", d.Region), slog.Any("warnings", d.Warnings))
	}
	return d, nil
}
