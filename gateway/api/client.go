package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds a call of a Client without its own Timeout.
const DefaultTimeout = 10 * time.Second

// maxAnswer is the largest answer a Client reads.
const maxAnswer = 16 << 20

// Client calls a carbongate's API. The zero value is not usable: set
// BaseURL.
type Client struct {
	BaseURL string        // e.g. http://localhost:8080
	HTTP    *http.Client  // nil: http.DefaultTransport, redirects not followed
	Timeout time.Duration // of each call; 0: DefaultTimeout
}

// Error is an answer other than 200: carbongate's error body when it sent
// one, else the body's text as Message.
type Error struct {
	Status int
	ErrorDetail
}

func (e *Error) Error() string {
	field := ""
	if e.Field != "" {
		field = " for " + e.Field
	}
	return fmt.Sprintf("carbongate answered %d%s: %s", e.Status, field, e.Message)
}

// Schedule asks where and when to run a job. It returns the answer and
// its body as it came.
func (c *Client) Schedule(ctx context.Context, req ScheduleRequest) (*Schedule, []byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	var out Schedule
	raw, err := c.call(ctx, http.MethodPost, PathSchedule, body, &out)
	if err != nil {
		return nil, raw, err
	}
	return &out, raw, nil
}

// Forecast asks for the forecast of zone in signal ("": the default).
func (c *Client) Forecast(ctx context.Context, zone, signal string) (*Forecast, []byte, error) {
	q := url.Values{"zone": {zone}}
	if signal != "" {
		q.Set("signal", signal)
	}
	var out Forecast
	raw, err := c.call(ctx, http.MethodGet, PathForecast+"?"+q.Encode(), nil, &out)
	if err != nil {
		return nil, raw, err
	}
	return &out, raw, nil
}

// Zones lists the zones carbongate can forecast.
func (c *Client) Zones(ctx context.Context) (*Zones, []byte, error) {
	var out Zones
	raw, err := c.call(ctx, http.MethodGet, PathZones, nil, &out)
	if err != nil {
		return nil, raw, err
	}
	return &out, raw, nil
}

// call sends a request and decodes a 200 answer into out.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base := strings.TrimSuffix(c.BaseURL, "/")
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("carbongate at %s: %w", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("carbongate at %s: reading the answer: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorBody
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return b, &Error{Status: resp.StatusCode, ErrorDetail: e.Error}
		}
		return b, &Error{Status: resp.StatusCode, ErrorDetail: ErrorDetail{Message: strings.TrimSpace(string(b))}}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return b, fmt.Errorf("carbongate at %s: the answer to %s %s is not what the API defines: %w", base, method, path, err)
	}
	return b, nil
}
