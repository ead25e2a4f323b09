package casdk

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// query holds a request's query parameters by lower-cased name: ASP.NET,
// which the SDK's server runs on, binds query parameters case-insensitively.
type query map[string][]string

// newQuery parses the request's query string strictly: a malformed
// escape (%zz) or a semicolon is a 400 naming the parameter (query when
// its name is what is malformed), not a parameter silently dropped.
func newQuery(c *echo.Context) (query, error) {
	q := query{}
	for pair := range strings.SplitSeq(c.Request().URL.RawQuery, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil || strings.Contains(rawKey, ";") {
			return nil, invalid("query", "the query string is malformed at %q: want name=value pairs joined by & and escaped as URLs are", clip(pair))
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil || strings.Contains(rawValue, ";") {
			return nil, invalid(key, "the value %q of %s is not valid URL encoding (a %% must start an escape like %%3A; a ; must be escaped as %%3B)", clip(rawValue), clip(key))
		}
		lk := strings.ToLower(key)
		q[lk] = append(q[lk], value)
	}
	return q, nil
}

// names returns the non-empty values of param (the SDK drops empty location
// names).
func (q query) names(param string) []string {
	var out []string
	for _, v := range q[strings.ToLower(param)] {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// one returns the single value of the first of params present (aliases of
// one parameter), "" when none is. Two values, or two aliases both given,
// are a 400 naming the first.
func (q query) one(params ...string) (string, string, error) {
	var got, name string
	for _, p := range params {
		vs := q[strings.ToLower(p)]
		if len(vs) == 0 {
			continue
		}
		if name != "" {
			return "", "", invalid(name, "give %s or %s, not both", name, p)
		}
		if len(vs) > 1 {
			return "", "", invalid(p, "%s is given %d times; give it once", p, len(vs))
		}
		got, name = strings.TrimSpace(vs[0]), p
	}
	if name == "" {
		name = params[0]
	}
	return got, name, nil
}

// present reports whether any of params is in the query (maybe empty).
func (q query) present(params ...string) bool {
	for _, p := range params {
		if _, ok := q[strings.ToLower(p)]; ok {
			return true
		}
	}
	return false
}

// time parses the optional time parameter params[0] (or an alias); given
// empty, it is a 400.
func (q query) time(params ...string) (*time.Time, string, error) {
	s, name, err := q.one(params...)
	if err != nil || (s == "" && !q.present(params...)) {
		return nil, name, err
	}
	t, err := parseTime(s, name)
	if err != nil {
		return nil, name, err
	}
	return &t, name, nil
}

// timeLayouts are the forms of time the SDK's clients send: RFC 3339 (an
// hour of one digit too, as in the SDK's documentation), a date and time
// without an offset (UTC; .NET would use the server's zone), a date alone,
// and Go's time.String form that the exporter's generated client sends,
// cut before "UTC".
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02",
	"2006-01-02 15:04:05.999999999 -0700",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02 15:04:05.999999999",
}

// parseTime reads a time of one of timeLayouts; anything else is a 400
// naming param. Times are returned in UTC.
func parseTime(s, param string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			if t.Year() < 1 || t.Year() > 9999 {
				break
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, invalid(param, "the value %q is not valid for %s: want an RFC 3339 date-time like 2022-03-01T15:30:00Z", clip(s), param)
}

// clip shortens a client's value for a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// windowSize parses windowSize (minutes, an int32 ≥ 0); absent: nil.
func windowSize(s, param string) (*int, error) {
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return nil, invalid(param, "the value %q is not valid for %s: want a whole number of minutes", clip(s), param)
	}
	if n < 0 {
		return nil, invalid(param, "%s must not be negative, got %d", param, n)
	}
	v := int(n)
	return &v, nil
}

// stamp formats a time as the SDK's answers carry them.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// timeSpan formats d as .NET serializes a TimeSpan: [d.]hh:mm:ss.
func timeSpan(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	hms := fmt.Sprintf("%02d:%02d:%02d", s/3600%24, s/60%60, s%60)
	if days := s / 86400; days > 0 {
		return strconv.FormatInt(days, 10) + "." + hms
	}
	return hms
}
