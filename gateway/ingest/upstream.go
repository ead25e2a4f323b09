package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// MaxBody bounds the size of one upstream answer (30 days of 5-minute
// WattTime points take about 1 MiB).
const MaxBody = 32 << 20

// UpstreamError is the cause (the Err) of the *forecast.Error a client
// returns for an HTTP answer that is not 2xx.
type UpstreamError struct {
	Source     string
	Status     int
	RetryAfter time.Duration // from the Retry-After header; 0 when absent
	Message    string        // the upstream's own message, shortened
}

func (e *UpstreamError) Error() string {
	s := "HTTP " + strconv.Itoa(e.Status)
	if e.RetryAfter > 0 {
		s += " (retry after " + e.RetryAfter.String() + ")"
	}
	return s
}

// Status returns the HTTP status of the first *UpstreamError in err's chain,
// or 0.
func Status(err error) int {
	var ue *UpstreamError
	if errors.As(err, &ue) {
		return ue.Status
	}
	return 0
}

// RetryAfter returns how long the upstream asked to wait before the next
// request (Retry-After of a 429 or 503 answer), and whether it said so.
func RetryAfter(err error) (time.Duration, bool) {
	var ue *UpstreamError
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		return ue.RetryAfter, true
	}
	return 0, false
}

// StatusError maps an HTTP answer that is not 2xx to a *forecast.Error whose
// Err is an *UpstreamError: 401 and 403 are EUNAUTHORIZED, 404 ENOTFOUND,
// 429 and 5xx EUNAVAILABLE (with Retry-After, in seconds or as an HTTP date
// relative to now), any other status EINVALID. The message names the source
// and status and quotes the upstream's message ("message" or "error" of a
// JSON body, else the start of the text).
func StatusError(source string, status int, header http.Header, body []byte, now time.Time) error {
	ue := &UpstreamError{Source: source, Status: status, Message: upstreamMessage(body)}
	var code string
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		code = forecast.EUNAUTHORIZED
	case status == http.StatusNotFound:
		code = forecast.ENOTFOUND
	case status == http.StatusTooManyRequests || status >= 500:
		code = forecast.EUNAVAILABLE
		ue.RetryAfter = parseRetryAfter(header.Get("Retry-After"), now)
	default:
		code = forecast.EINVALID
	}
	msg := fmt.Sprintf("%s answered %d %s", source, status, http.StatusText(status))
	if ue.Message != "" {
		msg += ": " + ue.Message
	}
	return &forecast.Error{Code: code, Message: msg, Err: ue}
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, 1<<31)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// upstreamMessage extracts a short, printable message from an error body.
func upstreamMessage(body []byte) string {
	var m struct {
		Message any `json:"message"`
		Error   any `json:"error"`
	}
	s := ""
	if json.Unmarshal(body, &m) == nil {
		if v, ok := m.Message.(string); ok {
			s = v
		} else if v, ok := m.Error.(string); ok {
			s = v
		}
	} else if utf8.Valid(body) && !strings.HasPrefix(strings.TrimSpace(string(body)), "<") {
		s = string(body)
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// Caller makes the GET requests of a client: each with its own deadline,
// the answer read up to MaxBody (and Budget) and non-2xx statuses mapped
// by StatusError.
type Caller struct {
	Source  string           // names the upstream in errors
	Client  *http.Client     // required
	Timeout time.Duration    // bounds one request, on top of ctx's deadline; 0: ctx's only
	Now     func() time.Time // reads Retry-After dates; nil: time.Now
	// Budget bounds the answer bytes held at once, beyond the first
	// FreeAnswerBytes of each, by every call that shares it (a process's
	// vendor clients share one, NewAnswerBudget), from the first byte
	// read until the answer is decoded; nil: MaxBody per answer only.
	Budget *oip.BodyBudget
}

// Sizes of the answer budget.
const (
	// DefaultAnswerBudget is the size of NewAnswerBudget: two answers of
	// MaxBody, or many ordinary ones (a 72-hour forecast is ~10 KB).
	DefaultAnswerBudget = 2 * MaxBody
	// FreeAnswerBytes of each answer are not drawn from the budget.
	FreeAnswerBytes = 64 << 10
)

// NewAnswerBudget returns a budget of DefaultAnswerBudget bytes for the
// answers of concurrent upstream calls (Caller.Budget).
func NewAnswerBudget() *oip.BodyBudget {
	return oip.NewBodyBudget(DefaultAnswerBudget, FreeAnswerBytes)
}

// Get sends a GET request for url with header and decodes a 2xx answer
// into v (DecodeJSON; what names the answer in errors). Errors: those of
// StatusError and DecodeJSON; EUNAVAILABLE when the request fails, times
// out (Timeout), the answer cannot be read or the answer budget is spent
// by other calls (try again later); EINVALID for an answer larger than
// MaxBody; ctx's own error when ctx ends first.
func (c Caller) Get(ctx context.Context, url string, header http.Header, what string, v any) error {
	cctx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: c.Source + ": cannot build request", Err: err}
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Client.Do(req)
	if err != nil {
		return c.transportError(ctx, cctx, "request failed", err)
	}
	defer resp.Body.Close()
	body, held, err := oip.ReadBody(resp.Body, resp.ContentLength, MaxBody, c.Budget, nil)
	if c.Budget != nil {
		defer c.Budget.Give(held)
	}
	switch {
	case errors.As(err, new(*http.MaxBytesError)):
		return forecast.Errorf(forecast.EINVALID, "%s: answer larger than %d bytes", c.Source, MaxBody)
	case errors.Is(err, oip.ErrBodyBudget):
		return forecast.Errorf(forecast.EUNAVAILABLE, "%s: the budget of %d bytes for answers being read is spent by other calls", c.Source, c.Budget.Size())
	case err != nil:
		return c.transportError(ctx, cctx, "reading the answer failed", err)
	}
	if resp.StatusCode/100 != 2 {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		return StatusError(c.Source, resp.StatusCode, resp.Header, body, now())
	}
	return DecodeJSON(c.Source, what, body, v)
}

func (c Caller) transportError(ctx, cctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cctx.Err() != nil {
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("%s: no answer within %v", c.Source, c.Timeout), Err: err}
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: c.Source + ": " + what, Err: err}
}

// DecodeJSON unmarshals body into v. A body that is not valid JSON, or whose
// values do not have the expected types, is EINVALID with a message that
// says what was wrong and where (byte offset, field).
func DecodeJSON(source, what string, body []byte, v any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return forecast.Errorf(forecast.EINVALID, "%s: empty answer to %s", source, what)
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var msg string
	switch {
	case errors.As(err, &syn) && syn.Offset >= int64(len(body)):
		msg = fmt.Sprintf("JSON ends early (after %d bytes)", len(body))
	case errors.As(err, &syn):
		msg = fmt.Sprintf("malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the top level"
		}
		msg = fmt.Sprintf("field %s holds a JSON %s where %s was expected (byte %d)", field, typ.Value, typ.Type, typ.Offset)
	default:
		msg = "malformed JSON: " + err.Error()
	}
	return &forecast.Error{Code: forecast.EINVALID, Message: fmt.Sprintf("%s: answer to %s: %s", source, what, msg), Err: err}
}

// ParseTime parses an RFC 3339 timestamp with any offset ("Z", "+02:00")
// and returns it in UTC. A timestamp without an offset is EINVALID: its
// zone would be a guess. field names the value in the error.
func ParseTime(source, field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &forecast.Error{Code: forecast.EINVALID,
			Message: fmt.Sprintf("%s: %s %q is not an RFC 3339 time with a zone offset", source, field, s), Err: err}
	}
	return t.UTC(), nil
}
