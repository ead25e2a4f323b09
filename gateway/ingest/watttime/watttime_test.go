package watttime

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/test/testsupport"
)

var ctx = context.Background()

func TestHistorical(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "historical_CAISO_NORTH.json"))
	c := a.client(t, ingest.NewManualClock(t10), nil)
	d, err := c.Historical(ctx, "CAISO_NORTH", t10, t10.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Points) != 24 || d.Period != 5*time.Minute || d.Model != "2023-03-01" || d.Region != "CAISO_NORTH" {
		t.Fatalf("data: %d points, period %v, model %q, region %q", len(d.Points), d.Period, d.Model, d.Region)
	}
	// 900 lbs/MWh is 408.233133 gCO2/kWh.
	if p := d.Points[0]; !p.Time.Equal(t10) || p.Time.Location() != time.UTC || math.Abs(p.Value-900*0.45359237) > 1e-9 {
		t.Fatalf("first point %+v, want 900 lbs/MWh in g/kWh at %v", p, t10)
	}
	q := a.requests()[0].Query()
	if q.Get("region") != "CAISO_NORTH" || q.Get("signal_type") != "co2_moer" ||
		q.Get("start") != "2024-01-15T10:00:00Z" || q.Get("end") != "2024-01-15T12:00:00Z" {
		t.Fatalf("query %v", q)
	}
	_, err = c.Historical(ctx, "CAISO_NORTH", t10, t10.Add(MaxSpan+time.Hour))
	wantCode(t, err, forecast.EINVALID)
}

func TestShiftedTimeZone(t *testing.T) {
	t.Parallel()
	clock := ingest.NewManualClock(t10)
	want, err := newAPI(t, serve(t, "historical_CAISO_NORTH.json")).client(t, clock, nil).Historical(ctx, "CAISO_NORTH", t10, t10.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	got, err := newAPI(t, serve(t, "historical_CAISO_NORTH_shifted.json")).client(t, clock, nil).Historical(ctx, "CAISO_NORTH", t10, t10.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got.Duplicates != 1 || len(got.Points) != len(want.Points) {
		t.Fatalf("shifted: %d points, %d duplicates; want %d points, 1 duplicate", len(got.Points), got.Duplicates, len(want.Points))
	}
	for i, p := range want.Points {
		g := got.Points[i]
		if !g.Time.Equal(p.Time) || g.Time.Location() != time.UTC || g.Value != p.Value {
			t.Fatalf("-08:00 point %d=%+v, want %+v", i, g, p)
		}
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	hist := func(c *Client) error {
		_, err := c.Historical(ctx, "CAISO_NORTH", t10, t10.Add(time.Hour))
		return err
	}
	t.Run("token reused until it expires", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, serve(t, "historical_CAISO_NORTH.json"))
		clock := ingest.NewManualClock(t10)
		c := a.client(t, clock, nil)
		for _, step := range []struct {
			advance time.Duration
			logins  int
		}{{0, 1}, {time.Minute, 1}, {27 * time.Minute, 1}, {time.Minute, 2}, {5 * time.Minute, 2}} {
			clock.Add(step.advance)
			if err := hist(c); err != nil {
				t.Fatal(err)
			}
			if got := len(a.logins()); got != step.logins {
				t.Fatalf("after %v: %d logins, want %d", clock.Now().Sub(t10), got, step.logins)
			}
		}
	})
	t.Run("refused token: log in again once", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, serve(t, "historical_CAISO_NORTH.json"))
		c := a.client(t, ingest.NewManualClock(t10), nil)
		if err := hist(c); err != nil {
			t.Fatal(err)
		}
		a.expireTokens() // e.g. revoked, or the clocks disagree
		if err := hist(c); err != nil {
			t.Fatal(err)
		}
		if got, want := len(a.logins()), 2; got != want {
			t.Fatalf("%d logins, want %d", got, want)
		}
		if got, want := len(a.requests()), 3; got != want {
			t.Fatalf("%d data requests, want %d (ok, refused, resent)", got, want)
		}
	})
	t.Run("still refused after a new login: give up", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, nil)
		a.handle = func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 0 {
				serve(t, "historical_CAISO_NORTH.json")(w, nil, n)
				return
			}
			http.Error(w, `{"error":"no access"}`, http.StatusUnauthorized)
		}
		c := a.client(t, ingest.NewManualClock(t10), nil)
		if err := hist(c); err != nil {
			t.Fatal(err)
		}
		wantCode(t, hist(c), forecast.EUNAUTHORIZED)
		if got, want := len(a.logins()), 2; got != want {
			t.Fatalf("%d logins, want %d", got, want)
		}
		// A token refused right after its login is not retried.
		a.expireTokens()
		wantCode(t, hist(c), forecast.EUNAUTHORIZED)
		if got, want := len(a.logins()), 3; got != want {
			t.Fatalf("%d logins, want %d", got, want)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, serve(t, "historical_CAISO_NORTH.json"))
		c := a.client(t, ingest.NewManualClock(t10), nil)
		c.cfg.Password = "other-" + a.password
		err := hist(c)
		wantCode(t, err, forecast.EUNAUTHORIZED)
		if !strings.Contains(err.Error(), "login refused") || len(a.requests()) != 0 {
			t.Fatalf("err=%v after %d data requests", err, len(a.requests()))
		}
	})
	t.Run("token and password are never logged", func(t *testing.T) {
		t.Parallel()
		a := newAPI(t, serve(t, "historical_CAISO_NORTH_gap.json"))
		var logs bytes.Buffer
		c := a.client(t, ingest.NewManualClock(t10), &logs)
		if err := hist(c); err != nil {
			t.Fatal(err)
		}
		a.expireTokens()
		if err := hist(c); err != nil {
			t.Fatal(err)
		}
		c.log.Info("config", "cfg", c.cfg, "token", c.token)
		out := logs.String()
		for _, s := range append(a.logins(), a.password) {
			if strings.Contains(out, s) {
				t.Fatalf("logs hold a secret:\n%s", out)
			}
		}
		if !strings.Contains(out, "logging in again") || !strings.Contains(out, "EXAMPLE_WARNING") {
			t.Fatalf("logs miss the re-login or the warning:\n%s", out)
		}
	})
}

func TestErrors(t *testing.T) {
	t.Parallel()
	status := func(code int, retryAfter string) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, _ int) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			http.Error(w, `{"error":"nope","message":"region not in plan"}`, code)
		}
	}
	tests := []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request, int)
		region string
		code   string
		msg    string
		wait   time.Duration
	}{
		{name: "forbidden region", handle: status(403, ""), code: forecast.EUNAUTHORIZED, msg: "403 Forbidden: region not in plan"},
		{name: "not found", handle: status(404, ""), code: forecast.ENOTFOUND},
		{name: "rate limited", handle: status(429, "42"), code: forecast.EUNAVAILABLE, wait: 42 * time.Second},
		{name: "server error", handle: status(500, ""), code: forecast.EUNAVAILABLE, msg: "500"},
		{name: "bad request", handle: status(400, ""), code: forecast.EINVALID},
		{name: "truncated JSON", handle: serve(t, "historical_CAISO_NORTH_truncated.json"), code: forecast.EINVALID, msg: "JSON ends early"},
		{name: "not an intensity", handle: serve(t, "historical_CAISO_NORTH_percentile.json"), code: forecast.EINVALID, msg: `units "percentile"`},
		{name: "another region", handle: serve(t, "historical_CAISO_NORTH.json"), region: "PJM_DC", code: forecast.EINVALID, msg: `meta.region is "CAISO_NORTH", not "PJM_DC"`},
		{name: "no meta", handle: serve(t, "region_from_loc.json"), code: forecast.EINVALID, msg: "no meta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newAPI(t, tt.handle).client(t, ingest.NewManualClock(t10), nil)
			region := tt.region
			if region == "" {
				region = "CAISO_NORTH"
			}
			_, err := c.Historical(ctx, region, t10, t10.Add(time.Hour))
			wantCode(t, err, tt.code)
			if !strings.Contains(forecast.ErrorMessage(err), tt.msg) {
				t.Fatalf("message %q does not say %q", forecast.ErrorMessage(err), tt.msg)
			}
			if got, _ := ingest.RetryAfter(err); got != tt.wait {
				t.Fatalf("RetryAfter=%v, want %v", got, tt.wait)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "historical_CAISO_NORTH.json"))
	c := a.client(t, ingest.NewManualClock(t10), nil)
	b, err := c.Fetch(ctx, "US-CAL-CISO", ingest.SignalMarginal, t10, t10.Add(time.Hour))
	if err != nil || len(b.Points) != 12 || b.Period != 5*time.Minute {
		t.Fatalf("Fetch=%d points, period %v, %v", len(b.Points), b.Period, err)
	}
	_, err = c.Fetch(ctx, "US-CAL-CISO", forecast.SignalLifecycle, t10, t10.Add(time.Hour))
	wantCode(t, err, forecast.ENOTFOUND)
	_, err = c.Fetch(ctx, "DE", ingest.SignalMarginal, t10, t10.Add(time.Hour))
	wantCode(t, err, forecast.ENOTFOUND)
	if got := c.Limits(); got.MaxSpan != MaxSpan || got.History != 0 {
		t.Fatalf("limits=%+v", got)
	}
}

func TestForecast(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "forecast_CAISO_NORTH.json"))
	c := a.client(t, ingest.NewManualClock(t10), nil)
	d, err := c.Forecast(ctx, "CAISO_NORTH", 2)
	if err != nil {
		t.Fatal(err)
	}
	gen := time.Date(2024, 1, 15, 12, 30, 0, 0, time.UTC)
	if len(d.Points) != 24 || !d.GeneratedAt.Equal(gen) || !d.Points[0].Time.Equal(gen) || math.Abs(d.Points[0].Value-850*LbsPerMWh) > 1e-9 {
		t.Fatalf("forecast=%+v", d)
	}
	if got := a.requests()[0].Query().Get("horizon_hours"); got != "2" {
		t.Fatalf("horizon_hours=%q", got)
	}
	_, err = c.Forecast(ctx, "CAISO_NORTH", MaxHorizon+1)
	wantCode(t, err, forecast.EINVALID)
}

func TestRegionFromLoc(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "region_from_loc.json"))
	c := a.client(t, ingest.NewManualClock(t10), nil)
	r, err := c.RegionFromLoc(ctx, 38.58, -121.49)
	if err != nil || r.Region != "CAISO_NORTH" || r.FullName == "" {
		t.Fatalf("RegionFromLoc=%+v, %v", r, err)
	}
	if q := a.requests()[0].Query(); q.Get("latitude") != "38.58" || q.Get("longitude") != "-121.49" {
		t.Fatalf("query %v", q)
	}
	_, err = c.RegionFromLoc(ctx, 91, 0)
	wantCode(t, err, forecast.EINVALID)
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},
		{Username: "u"},
		{Username: "u", Password: "p", BaseURL: "api.watttime.org"},
		{Username: "u", Password: "p", Regions: map[forecast.Zone]string{"us-cal-ciso": "CAISO_NORTH"}},
		{Username: "u", Password: "p", Regions: map[forecast.Zone]string{"US-CAL-CISO": ""}},
		{Username: "u", Password: "p", Timeout: -time.Second},
	} {
		_, err := New(cfg)
		wantCode(t, err, forecast.EINVALID)
	}
}

// TestRedirectKeepsToken: a redirect to another host (here another port,
// to which net/http would copy Authorization) is not followed.
func TestRedirectKeepsToken(t *testing.T) {
	t.Parallel()
	other := testsupport.NewOtherHost(t)
	redirect := testsupport.RedirectTo(other.URL)
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request, _ int) { redirect(w, r) })
	c := a.client(t, ingest.NewManualClock(t10), nil)
	_, err := c.Historical(ctx, "CAISO_NORTH", t10, t10.Add(2*time.Hour))
	wantCode(t, err, forecast.EUNAVAILABLE)
	if got := other.Requests(); len(got) != 0 {
		t.Fatalf("the other host got %d requests (Authorization %q)", len(got), got[0].Get("Authorization"))
	}
}
