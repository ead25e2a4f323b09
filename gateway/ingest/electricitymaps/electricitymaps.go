// Package electricitymaps is a client of the Electricity Maps API v3
// carbon-intensity endpoints (latest, history, past-range, forecast) and an
// ingest.Source over them.
//
// Every request sends the token in the auth-token header and the signal as
// emissionFactorType (lifecycle or direct). Values are gCO2eq/kWh, hourly.
// Timestamps are read as RFC 3339 with any offset and returned in UTC; a
// timestamp without an offset is EINVALID. An answer for another zone than
// the one asked (the API falls back to the caller's location when it does
// not know a zone) is ENOTFOUND.
package electricitymaps

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/oip"
)

// Name is the source name in metrics, logs and rate limits.
const Name = "electricitymaps"

// Defaults and limits of the API.
const (
	DefaultBaseURL = "https://api.electricitymaps.com"
	DefaultTimeout = 20 * time.Second
	// HistoryWindow is how far back /history reaches from the current
	// hour: it answers the last 24 hours, the current one included.
	HistoryWindow = 23 * time.Hour
	// MaxPastRange is the longest range /past-range answers at hourly
	// granularity.
	MaxPastRange = 10 * 24 * time.Hour
	// MinHorizon and MaxHorizon bound the forecast's horizonHours.
	MinHorizon, MaxHorizon = 6, 72
)

// Config configures a Client.
type Config struct {
	Token   string // required: the API token, sent as auth-token; never logged
	BaseURL string // default DefaultBaseURL
	// HTTPClient sends the requests (a copy that follows no redirect to
	// another host, ingest.SameHostRedirects); nil: a new http.Client.
	HTTPClient *http.Client
	// Timeout bounds each request, on top of the caller's deadline;
	// default DefaultTimeout.
	Timeout time.Duration
	// PastRange makes Fetch use /v3/carbon-intensity/past-range (a paid
	// endpoint), which reaches back years in chunks of MaxPastRange;
	// otherwise Fetch uses /history, which reaches back HistoryWindow.
	PastRange bool
	// AnswerBudget bounds the bytes of answers being read at once, shared
	// with the process's other vendor clients (ingest.Caller.Budget); nil:
	// one of this client's own (ingest.NewAnswerBudget).
	AnswerBudget *oip.BodyBudget
	Logger       *slog.Logger     // nil: discard
	Now          func() time.Time // reads Retry-After dates; nil: time.Now
}

// LogValue keeps the token out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", c.BaseURL), slog.Bool("past_range", c.PastRange), slog.Duration("timeout", c.Timeout))
}

// Client calls the API. Safe for concurrent use.
type Client struct {
	cfg    Config
	base   *url.URL
	caller ingest.Caller
	log    *slog.Logger
}

var _ ingest.Source = (*Client)(nil)

// New validates cfg and returns a Client; it makes no call. EINVALID when
// the token is missing or the base URL is not an absolute http(s) URL.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "token", "electricitymaps: a token is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "base_url", "electricitymaps: base URL %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.Timeout < 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "timeout", "electricitymaps: timeout must be ≥ 0")
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
	return &Client{
		cfg: cfg, base: base, log: cfg.Logger,
		caller: ingest.Caller{Source: Name, Client: cfg.HTTPClient, Timeout: cfg.Timeout, Now: cfg.Now, Budget: cfg.AnswerBudget},
	}, nil
}

// Name implements ingest.Source.
func (c *Client) Name() string { return Name }

// Limits implements ingest.Source: HistoryWindow in chunks of a day with
// /history, unlimited in chunks of MaxPastRange with /past-range.
func (c *Client) Limits() ingest.Limits {
	if c.cfg.PastRange {
		return ingest.Limits{MaxSpan: MaxPastRange}
	}
	return ingest.Limits{History: HistoryWindow, MaxSpan: 24 * time.Hour}
}

// Fetch implements ingest.Source with PastRange, or with History filtered
// to [from, to).
func (c *Client) Fetch(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (ingest.Batch, error) {
	if c.cfg.PastRange {
		return c.PastRange(ctx, zone, signal, from, to)
	}
	b, err := c.History(ctx, zone, signal)
	b.Points, _ = ingest.Clip(b.Points, from, to)
	return b, err
}

// Latest returns the zone's latest value (the current hour, often
// estimated): GET /v3/carbon-intensity/latest. A null value is EUNAVAILABLE.
func (c *Client) Latest(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (ingest.Point, error) {
	const path = "/v3/carbon-intensity/latest"
	var r point
	if err := c.get(ctx, path, zone, signal, nil, &r); err != nil {
		return ingest.Point{}, err
	}
	if err := checkZone(path, zone, r.Zone); err != nil {
		return ingest.Point{}, err
	}
	pts, missing, err := convert(path, "", zone, signal, []point{r})
	if err != nil {
		return ingest.Point{}, err
	}
	if missing > 0 {
		return ingest.Point{}, forecast.Errorf(forecast.EUNAVAILABLE, "electricitymaps: no latest value for zone %s", zone)
	}
	return pts[0], nil
}

// History returns the zone's last 24 hours: GET
// /v3/carbon-intensity/history.
func (c *Client) History(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (ingest.Batch, error) {
	const path = "/v3/carbon-intensity/history"
	var r struct {
		Zone    string   `json:"zone"`
		History *[]point `json:"history"`
	}
	if err := c.get(ctx, path, zone, signal, nil, &r); err != nil {
		return ingest.Batch{}, err
	}
	return batch(path, "history", zone, signal, r.Zone, r.History)
}

// PastRange returns the zone's hours in [from, to) (UTC; at most
// MaxPastRange): GET /v3/carbon-intensity/past-range. EINVALID for an empty
// or too long range.
func (c *Client) PastRange(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (ingest.Batch, error) {
	const path = "/v3/carbon-intensity/past-range"
	if !from.Before(to) || to.Sub(from) > MaxPastRange {
		return ingest.Batch{}, forecast.Errorf(forecast.EINVALID, "electricitymaps: past range [%s, %s) must be non-empty and at most %v",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), MaxPastRange)
	}
	q := url.Values{"start": {from.UTC().Format(time.RFC3339)}, "end": {to.UTC().Format(time.RFC3339)}}
	var r struct {
		Zone string   `json:"zone"`
		Data *[]point `json:"data"`
	}
	if err := c.get(ctx, path, zone, signal, q, &r); err != nil {
		return ingest.Batch{}, err
	}
	b, err := batch(path, "data", zone, signal, r.Zone, r.Data)
	b.Points, _ = ingest.Clip(b.Points, from, to)
	return b, err
}

// Forecast is the API's forecast of a zone.
type Forecast struct {
	Zone      forecast.Zone
	Signal    forecast.Signal
	UpdatedAt time.Time // when the API made the forecast
	ingest.Batch
}

// Forecast returns the zone's forecast for the next horizonHours
// (MinHorizon to MaxHorizon; 0 lets the API choose): GET
// /v3/carbon-intensity/forecast.
func (c *Client) Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal, horizonHours int) (Forecast, error) {
	const path = "/v3/carbon-intensity/forecast"
	var q url.Values
	if horizonHours != 0 {
		if horizonHours < MinHorizon || horizonHours > MaxHorizon {
			return Forecast{}, forecast.FieldErrorf(forecast.EINVALID, "horizon", "electricitymaps: horizon %d h is outside %d–%d h", horizonHours, MinHorizon, MaxHorizon)
		}
		q = url.Values{"horizonHours": {strconv.Itoa(horizonHours)}}
	}
	var r struct {
		Zone      string   `json:"zone"`
		Forecast  *[]point `json:"forecast"`
		UpdatedAt string   `json:"updatedAt"`
	}
	if err := c.get(ctx, path, zone, signal, q, &r); err != nil {
		return Forecast{}, err
	}
	b, err := batch(path, "forecast", zone, signal, r.Zone, r.Forecast)
	if err != nil {
		return Forecast{}, err
	}
	f := Forecast{Zone: zone, Signal: signal, Batch: b}
	if r.UpdatedAt != "" {
		if f.UpdatedAt, err = ingest.ParseTime(Name, path+" updatedAt", r.UpdatedAt); err != nil {
			return Forecast{}, err
		}
	}
	return f, nil
}

// get sends GET path?zone=&emissionFactorType=&q… and decodes the answer
// into v.
func (c *Client) get(ctx context.Context, path string, zone forecast.Zone, signal forecast.Signal, q url.Values, v any) error {
	if signal != forecast.SignalLifecycle && signal != forecast.SignalDirect {
		return forecast.FieldErrorf(forecast.ENOTFOUND, "signal", "electricitymaps serves the lifecycle and direct signals, not %q", signal)
	}
	if z, err := forecast.ParseZone(string(zone)); err != nil || z != zone {
		return forecast.FieldErrorf(forecast.EINVALID, "zone", "electricitymaps: zone %q is not an upper-case zone id", zone)
	}
	query := url.Values{"zone": {string(zone)}, "emissionFactorType": {string(signal)}}
	for k, vs := range q {
		query[k] = vs
	}
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	t0 := time.Now()
	err := c.caller.Get(ctx, u.String(), http.Header{"Auth-Token": {c.cfg.Token}}, path, v)
	c.log.LogAttrs(ctx, slog.LevelDebug, "electricitymaps: request", slog.String("path", path), slog.String("zone", string(zone)),
		slog.String("signal", string(signal)), slog.Duration("took", time.Since(t0)), slog.String("code", forecast.ErrorCode(err)))
	return err
}
