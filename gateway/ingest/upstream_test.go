package ingest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

func TestStatusError(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 3, 6, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		code       string
		wait       time.Duration
		msg        string
	}{
		{name: "401", status: 401, body: `{"error":"Invalid auth-token"}`, code: forecast.EUNAUTHORIZED, msg: "Invalid auth-token"},
		{name: "403", status: 403, body: `{"message":"no access to region"}`, code: forecast.EUNAUTHORIZED, msg: "no access to region"},
		{name: "404", status: 404, body: `not here`, code: forecast.ENOTFOUND, msg: "not here"},
		{name: "429 seconds", status: 429, retryAfter: "7", code: forecast.EUNAVAILABLE, wait: 7 * time.Second},
		{name: "429 date", status: 429, retryAfter: now.Add(90 * time.Second).Format(http.TimeFormat), code: forecast.EUNAVAILABLE, wait: 90 * time.Second},
		{name: "429 garbage", status: 429, retryAfter: "soon", code: forecast.EUNAVAILABLE},
		{name: "503", status: 503, retryAfter: "2", body: "<html>busy</html>", code: forecast.EUNAVAILABLE, wait: 2 * time.Second},
		{name: "500", status: 500, code: forecast.EUNAVAILABLE},
		{name: "400", status: 400, body: `{"message":"bad start"}`, code: forecast.EINVALID, msg: "bad start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.retryAfter != "" {
				h.Set("Retry-After", tt.retryAfter)
			}
			err := StatusError("up", tt.status, h, []byte(tt.body), now)
			wantCode(t, err, tt.code)
			if got := Status(err); got != tt.status {
				t.Fatalf("Status=%d, want %d", got, tt.status)
			}
			wait, ok := RetryAfter(err)
			if wait != tt.wait || ok != (tt.wait > 0) {
				t.Fatalf("RetryAfter=%v, %v, want %v", wait, ok, tt.wait)
			}
			if m := forecast.ErrorMessage(err); !strings.Contains(m, tt.msg) || strings.Contains(m, "<html>") {
				t.Fatalf("message %q does not quote %q", m, tt.msg)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2024, 3, 5, 22, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		wantErr bool
	}{
		{in: "2024-03-05T22:00:00Z"},
		{in: "2024-03-05T22:00:00.000Z"},
		{in: "2024-03-06T00:00:00+02:00"},
		{in: "2024-03-05T14:00:00-08:00"},
		{in: "2024-03-05T22:00:00+00:00"},
		{in: "2024-03-05T22:00:00", wantErr: true},
		{in: "2024-03-05 22:00:00Z", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTime("up", "datetime", tt.in)
			if tt.wantErr {
				wantCode(t, err, forecast.EINVALID)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(want) || got.Location() != time.UTC {
				t.Fatalf("ParseTime(%q)=%v, want %v in UTC", tt.in, got, want)
			}
		})
	}
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	var v struct {
		Data []struct {
			Value float64 `json:"value"`
		} `json:"data"`
	}
	tests := []struct{ name, body, want string }{
		{name: "truncated", body: `{"data":[{"value":1}`, want: "ends early"},
		{name: "syntax", body: `{"data":[{"value":1},]}`, want: "malformed JSON at byte"},
		{name: "type", body: `{"data":[{"value":"high"}]}`, want: "field data.value holds a JSON string where float64 was expected"},
		{name: "empty", body: ``, want: "empty answer"},
		{name: "html", body: `<html></html>`, want: "malformed JSON at byte 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := DecodeJSON("up", "/x", []byte(tt.body), &v)
			wantCode(t, err, forecast.EINVALID)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestCallerGet(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("X-Key") != "k" || r.Header.Get("Accept") != "application/json" {
				http.Error(w, "headers", 400)
				return
			}
			w.Write([]byte(`{"ok":true}`))
		case "/throttled":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(429)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := Caller{Source: "up", Client: srv.Client(), Timeout: 10 * time.Second}
	ctx := context.Background()
	var answer struct{ OK bool }
	err := c.Get(ctx, srv.URL+"/ok", http.Header{"X-Key": {"k"}}, "/ok", &answer)
	if err != nil || !answer.OK {
		t.Fatalf("Get=%+v, %v", answer, err)
	}
	err = c.Get(ctx, srv.URL+"/throttled", nil, "/throttled", &answer)
	wantCode(t, err, forecast.EUNAVAILABLE)
	if d, _ := RetryAfter(err); d != 3*time.Second {
		t.Fatalf("RetryAfter=%v, want 3s", d)
	}
	err = c.Get(ctx, srv.URL+"/nope", nil, "/nope", &answer)
	wantCode(t, err, forecast.ENOTFOUND)

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Get(canceled, srv.URL+"/ok", nil, "/ok", &answer); err != context.Canceled {
		t.Fatalf("canceled Get: %v, want context.Canceled", err)
	}
	unreachable := Caller{Source: "up", Client: srv.Client()}
	err = unreachable.Get(ctx, "http://127.0.0.1:1/", nil, "/", &answer)
	wantCode(t, err, forecast.EUNAVAILABLE)
}
