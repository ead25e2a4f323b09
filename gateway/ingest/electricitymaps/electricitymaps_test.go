package electricitymaps

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
	"github.com/carbongate/carbongate/test/testsupport"
)

var ctx = context.Background()

func TestHistory(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "history_DE.json"))
	var logs bytes.Buffer
	b, err := a.client(t, false, &logs).History(ctx, "DE", forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Points) != 24 || b.Period != time.Hour || b.Duplicates+b.Conflicts+b.Missing != 0 {
		t.Fatalf("batch: %d points, period %v, %+v", len(b.Points), b.Period, b)
	}
	first, last := b.Points[0], b.Points[23]
	if want := time.Date(2024, 3, 5, 20, 0, 0, 0, time.UTC); !first.Time.Equal(want) || first.Time.Location() != time.UTC {
		t.Fatalf("first point at %v, want %v UTC", first.Time, want)
	}
	if first.Value != 534 || first.Estimated || !last.Estimated {
		t.Fatalf("first=%+v last=%+v", first, last)
	}
	if want := time.Date(2024, 3, 5, 21, 47, 12, 304e6, time.UTC); !first.UpdatedAt.Equal(want) {
		t.Fatalf("updatedAt=%v, want %v", first.UpdatedAt, want)
	}
	q := a.requests()[0]
	if q.Path != "/v3/carbon-intensity/history" || q.Query().Get("zone") != "DE" || q.Query().Get("emissionFactorType") != "lifecycle" {
		t.Fatalf("request %s", q)
	}
	if strings.Contains(logs.String(), a.token) {
		t.Fatalf("the token is in the logs:\n%s", logs.String())
	}
}

func TestShiftedTimeZone(t *testing.T) {
	t.Parallel()
	want, err := newAPI(t, serve(t, "history_DE.json")).client(t, false, nil).History(ctx, "DE", forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	got, err := newAPI(t, serve(t, "history_DE_shifted.json")).client(t, false, nil).History(ctx, "DE", forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	if got.Duplicates != 1 || got.Missing != 1 || got.Conflicts != 0 {
		t.Fatalf("duplicates, missing, conflicts=%d, %d, %d, want 1, 1, 0", got.Duplicates, got.Missing, got.Conflicts)
	}
	// +02:00 times are the same instants, in UTC and in order; the hour
	// without a value is missing.
	if len(got.Points) != 23 {
		t.Fatalf("%d points, want 23", len(got.Points))
	}
	j := 0
	for i, p := range want.Points {
		if i == 14 { // the entry without a value (index 15 in the file, after the repeat)
			continue
		}
		g := got.Points[j]
		j++
		if !g.Time.Equal(p.Time) || g.Time.Location() != time.UTC || g.Value != p.Value || !g.UpdatedAt.Equal(p.UpdatedAt) {
			t.Fatalf("shifted point %d=%+v, want %+v", j-1, g, p)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	status := func(code int, retryAfter, body string) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, _ *http.Request, _ int) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(code)
			w.Write([]byte(body))
		}
	}
	tests := []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request, int)
		zone   forecast.Zone
		signal forecast.Signal
		badTok bool
		code   string
		msg    string
		noCall bool
	}{
		{name: "wrong token", handle: serve(t, "history_DE.json"), badTok: true, code: forecast.EUNAUTHORIZED, msg: "401 Unauthorized: Invalid auth-token"},
		{name: "forbidden", handle: status(403, "", `{"message":"zone not in plan"}`), code: forecast.EUNAUTHORIZED, msg: "zone not in plan"},
		{name: "not found", handle: status(404, "", `{"message":"Zone 'XX' does not exist"}`), code: forecast.ENOTFOUND},
		{name: "unknown zone answered for another", handle: serve(t, "history_DE.json"), zone: "XX", code: forecast.ENOTFOUND, msg: "answered for zone DE when asked for XX"},
		{name: "rate limited", handle: status(429, "30", `{"message":"Too many requests"}`), code: forecast.EUNAVAILABLE, msg: "429"},
		{name: "server error", handle: status(502, "", "<html>bad gateway</html>"), code: forecast.EUNAVAILABLE, msg: "502 Bad Gateway"},
		{name: "truncated JSON", handle: serve(t, "history_DE_truncated.json"), code: forecast.EINVALID, msg: "JSON ends early"},
		{name: "value of the wrong type", handle: serve(t, "history_DE_string_value.json"), code: forecast.EINVALID, msg: "field history.carbonIntensity holds a JSON string"},
		{name: "time without offset", handle: serve(t, "history_DE_no_offset.json"), code: forecast.EINVALID, msg: `history[5] datetime "2024-03-05T23:00:00.000" is not an RFC 3339 time with a zone offset`},
		{name: "other signal in the answer", handle: serve(t, "history_DE.json"), signal: forecast.SignalDirect, code: forecast.EINVALID, msg: `emissionFactorType "lifecycle", not "direct"`},
		{name: "no history array", handle: serve(t, "latest_DE.json"), code: forecast.EINVALID, msg: "no history array"},
		{name: "marginal signal", handle: serve(t, "history_DE.json"), signal: ingest.SignalMarginal, code: forecast.ENOTFOUND, noCall: true},
		{name: "lower-case zone", handle: serve(t, "history_DE.json"), zone: "de", code: forecast.EINVALID, noCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, tt.handle)
			c := a.client(t, false, nil)
			if tt.badTok {
				c.cfg.Token = "wrong"
			}
			zone, signal := tt.zone, tt.signal
			if zone == "" {
				zone = "DE"
			}
			if signal == "" {
				signal = forecast.SignalLifecycle
			}
			_, err := c.History(ctx, zone, signal)
			wantCode(t, err, tt.code)
			if !strings.Contains(forecast.ErrorMessage(err), tt.msg) {
				t.Fatalf("message %q does not say %q", forecast.ErrorMessage(err), tt.msg)
			}
			if n := len(a.requests()); (n == 0) != tt.noCall {
				t.Fatalf("%d requests made", n)
			}
		})
	}
}

func TestLatest(t *testing.T) {
	t.Parallel()
	p, err := newAPI(t, serve(t, "latest_DE.json")).client(t, false, nil).Latest(ctx, "DE", forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2024, 3, 6, 20, 0, 0, 0, time.UTC); !p.Time.Equal(want) || !p.Estimated || p.Value <= 0 {
		t.Fatalf("latest=%+v", p)
	}
}

func TestPastRange(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "past_range_DE.json"))
	c := a.client(t, true, nil)
	from, to := time.Date(2024, 3, 1, 6, 0, 0, 0, time.UTC), time.Date(2024, 3, 2, 6, 0, 0, 0, time.UTC)
	b, err := c.PastRange(ctx, "DE", forecast.SignalLifecycle, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Points) != 24 || !b.Points[0].Time.Equal(from) || !b.Points[23].Time.Equal(to.Add(-time.Hour)) {
		t.Fatalf("%d points from %v", len(b.Points), b.Points[0].Time)
	}
	q := a.requests()[0].Query()
	if q.Get("start") != "2024-03-01T06:00:00Z" || q.Get("end") != "2024-03-02T06:00:00Z" {
		t.Fatalf("query %v", q)
	}
	_, err = c.PastRange(ctx, "DE", forecast.SignalLifecycle, from, from.Add(MaxPastRange+time.Hour))
	wantCode(t, err, forecast.EINVALID)
	if got := c.Limits(); got.History != 0 || got.MaxSpan != MaxPastRange {
		t.Fatalf("limits=%+v", got)
	}
}

func TestForecast(t *testing.T) {
	t.Parallel()
	a := newAPI(t, serve(t, "forecast_DE.json"))
	c := a.client(t, false, nil)
	f, err := c.Forecast(ctx, "DE", forecast.SignalLifecycle, 24)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Points) != 24 || f.UpdatedAt.IsZero() || !f.Points[0].Time.Equal(time.Date(2024, 3, 6, 20, 0, 0, 0, time.UTC)) {
		t.Fatalf("forecast=%+v", f)
	}
	if got := a.requests()[0].Query().Get("horizonHours"); got != "24" {
		t.Fatalf("horizonHours=%q", got)
	}
	_, err = c.Forecast(ctx, "DE", forecast.SignalLifecycle, 100)
	wantCode(t, err, forecast.EINVALID)
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {Token: "t", BaseURL: "ftp://x"}, {Token: "t", BaseURL: "/relative"}, {Token: "t", Timeout: -1}} {
		_, err := New(cfg)
		wantCode(t, err, forecast.EINVALID)
	}
}

// TestRedirectKeepsToken: a redirect to another host is not followed, so
// the auth-token never reaches it.
func TestRedirectKeepsToken(t *testing.T) {
	t.Parallel()
	other := testsupport.NewOtherHost(t)
	redirect := testsupport.RedirectTo(other.URL)
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request, _ int) { redirect(w, r) })
	_, err := a.client(t, false, nil).History(ctx, "DE", forecast.SignalLifecycle)
	wantCode(t, err, forecast.EUNAVAILABLE)
	if got := other.Requests(); len(got) != 0 {
		t.Fatalf("the other host got %d requests (auth-token %q)", len(got), got[0].Get("auth-token"))
	}
}
