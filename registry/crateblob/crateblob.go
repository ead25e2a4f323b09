// Package crateblob stores model artifact directories in a CrateDB BLOB
// table, over CrateDB's HTTP blob API (PUT, GET, HEAD and DELETE on
// /_blobs/<table>/<sha1>): the "just CrateDB" configuration, where one
// CrateDB holds the registry's tables and the models' files.
//
// A blob table is content-addressed: a blob's name is the SHA-1 of its
// bytes, and CrateDB refuses a PUT whose body does not hash to the name.
// A directory is stored as one blob per file plus a manifest blob (JSON:
// each file's path, SHA-1 and size); the directory's location names the
// manifest:
//
//	crate+blob://host:4200/<table>/<sha1 of the manifest>    (HTTP)
//	crate+blobs://host:4200/<table>/<sha1 of the manifest>   (HTTPS)
//
// so a location pins every byte under it: Download checks the manifest's
// SHA-1 and each file's SHA-1 and size as it writes them, and fails
// (EINVALID) on any difference. The same URI without the digest names
// the table (what Upload writes to and what a fetcher trusts).
//
// Errors are *forecast.Error values: EINVALID for a malformed URI, a
// digest mismatch or artifacts over the size limits, ENOTFOUND for a
// missing blob or table, EUNAUTHORIZED for a refused request,
// EUNAVAILABLE for an unreachable or failing server; context errors stay
// in the chain. Every request has a deadline (Client.Timeout unless ctx
// has an earlier one).
package crateblob

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// URI schemes: plain HTTP and HTTPS to CrateDB's HTTP port.
const (
	Scheme    = "crate+blob"
	SchemeTLS = "crate+blobs"
)

// DefaultTimeout bounds one request when Client.Timeout is 0.
const DefaultTimeout = time.Minute

// Location is a parsed crate+blob(s)://host:port/table[/digest] URI.
// Digest is "" when the URI names the table.
type Location struct {
	TLS    bool
	Host   string // host:port of CrateDB's HTTP endpoint
	Table  string // the blob table, without the "blob." schema
	Digest string // 40 lowercase hex digits, or ""
}

func (l Location) String() string {
	s := Scheme
	if l.TLS {
		s = SchemeTLS
	}
	s += "://" + l.Host + "/" + l.Table
	if l.Digest != "" {
		s += "/" + l.Digest
	}
	return s
}

// TableLocation returns l without its digest: the table it lies in.
func (l Location) TableLocation() Location { l.Digest = ""; return l }

// Blob returns the location of the blob digest in l's table.
func (l Location) Blob(digest string) Location { l.Digest = digest; return l }

// Under reports whether l lies in the table base names (same scheme, host
// and table; base's digest, when set, must be l's).
func (l Location) Under(base Location) bool {
	return l.TLS == base.TLS && strings.EqualFold(l.Host, base.Host) && l.Table == base.Table &&
		(base.Digest == "" || base.Digest == l.Digest)
}

// IsURI reports whether s is a crate+blob:// or crate+blobs:// URI.
func IsURI(s string) bool {
	return strings.HasPrefix(s, Scheme+"://") || strings.HasPrefix(s, SchemeTLS+"://")
}

// ParseURI parses crate+blob(s)://host:port/table[/sha1]. EINVALID for
// anything else: no host, a table name CrateDB would not take, a digest
// that is not 40 hex digits, user info, a query or more path segments.
func ParseURI(s string) (Location, error) {
	bad := func(format string, args ...any) (Location, error) {
		return Location{}, forecast.Errorf(forecast.EINVALID, "%s: "+format, append([]any{forecast.RedactURI(s)}, args...)...)
	}
	if !IsURI(s) {
		return bad("not a %s://host:port/table[/sha1] URI", Scheme)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("not a URL")
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad("want %s://host:port/table[/sha1], without user, query or fragment", Scheme)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) > 2 || parts[0] == "" {
		return bad("want %s://host:port/table[/sha1]", Scheme)
	}
	l := Location{TLS: u.Scheme == SchemeTLS, Host: u.Host, Table: parts[0]}
	if !validTable(l.Table) {
		return bad("table %q: use lowercase letters, digits and _", l.Table)
	}
	if len(parts) == 2 {
		if !ValidDigest(parts[1]) {
			return bad("%q is not a SHA-1 digest (40 lowercase hex digits)", parts[1])
		}
		l.Digest = parts[1]
	}
	return l, nil
}

// validTable accepts the table names this package uses unquoted in SQL
// and in request paths.
func validTable(s string) bool {
	if s == "" || len(s) > 255 || s[0] == '_' || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// ValidDigest reports whether s is a SHA-1 digest as CrateDB names blobs:
// 40 lowercase hex digits.
func ValidDigest(s string) bool {
	if len(s) != 2*sha1.Size {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// Client talks to CrateDB's HTTP endpoint. Construct it with New.
type Client struct {
	hc      *http.Client
	timeout time.Duration
}

// Config configures a Client.
type Config struct {
	// HTTP is the client requests go through; nil: one of the Client's own
	// (dial timeout 10 s, no overall timeout: each request's context has
	// the deadline).
	HTTP *http.Client
	// Timeout bounds each request (0: DefaultTimeout); a context deadline
	// that comes earlier wins.
	Timeout time.Duration
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	c := &Client{hc: cfg.HTTP, timeout: cfg.Timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.hc == nil {
		tr := &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: c.timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		}
		c.hc = &http.Client{Transport: tr}
	}
	return c
}

// Close releases the Client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// blobURL is the HTTP URL of l (a blob, or with no digest, the table).
func blobURL(l Location) string {
	scheme := "http"
	if l.TLS {
		scheme = "https"
	}
	u := scheme + "://" + l.Host + "/_blobs/" + l.Table
	if l.Digest != "" {
		u += "/" + l.Digest
	}
	return u
}

// do sends one request with the Client's deadline; the caller closes the
// response body and cancels. Transport errors are classified.
func (c *Client) do(ctx context.Context, method, u string, body io.Reader, size int64, l Location) (*http.Response, context.CancelFunc, error) {
	return c.doType(ctx, method, u, "application/octet-stream", body, size, l)
}

// doType is do with the body's content type.
func (c *Client) doType(ctx context.Context, method, u, contentType string, body io.Reader, size int64, l Location) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		cancel()
		return nil, nil, forecast.Errorf(forecast.EINVALID, "%s: %v", l, err)
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		return nil, nil, transportError(ctx, method, l, err)
	}
	return resp, cancel, nil
}

// transportError: the context's error kept in the chain; anything else
// is EUNAVAILABLE naming the server.
func transportError(ctx context.Context, method string, l Location, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("CrateDB blob store at %s: %s %s: no answer in time", l.Host, method, l), Err: err}
	}
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: fmt.Sprintf("CrateDB blob store at %s unreachable: %s %s: %v", l.Host, method, l, err), Err: err}
}

// statusError maps an unexpected answer to the domain vocabulary.
func statusError(method string, l Location, resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	code := forecast.EUNAVAILABLE
	switch resp.StatusCode {
	case http.StatusNotFound:
		code = forecast.ENOTFOUND
	case http.StatusBadRequest:
		code = forecast.EINVALID
	case http.StatusUnauthorized, http.StatusForbidden:
		code = forecast.EUNAUTHORIZED
	}
	detail := strings.TrimSpace(string(msg))
	if detail != "" {
		detail = ": " + detail
	}
	return forecast.Errorf(code, "%s %s: %s%s", method, l, resp.Status, detail)
}

// Put stores size bytes of body as the blob digest of table l (l.Digest is
// ignored). It returns true when the blob was created, false when the
// table already held it (the same bytes: the name is their hash). CrateDB
// checks the digest: EINVALID when body does not hash to it.
func (c *Client) Put(ctx context.Context, l Location, digest string, body io.Reader, size int64) (bool, error) {
	if !ValidDigest(digest) {
		return false, forecast.Errorf(forecast.EINVALID, "%q is not a SHA-1 digest", digest)
	}
	l = l.Blob(digest)
	resp, cancel, err := c.do(ctx, http.MethodPut, blobURL(l), body, size, l)
	if err != nil {
		return false, err
	}
	defer cancel()
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated:
		return true, nil
	case http.StatusConflict:
		return false, nil
	case http.StatusBadRequest:
		return false, forecast.Errorf(forecast.EINVALID, "PUT %s: CrateDB refused the blob: its content does not hash to %s (%s)", l, digest, resp.Status)
	}
	return false, statusError(http.MethodPut, l, resp)
}

// Get writes the blob l to w, at most max bytes (EINVALID beyond), and
// checks that what it wrote hashes to l.Digest (EINVALID otherwise:
// nothing written may be used). ENOTFOUND when the table has no such
// blob.
func (c *Client) Get(ctx context.Context, l Location, w io.Writer, max int64) (int64, error) {
	if !ValidDigest(l.Digest) {
		return 0, forecast.Errorf(forecast.EINVALID, "%s names no blob", l)
	}
	resp, cancel, err := c.do(ctx, http.MethodGet, blobURL(l), nil, 0, l)
	if err != nil {
		return 0, err
	}
	defer cancel()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, statusError(http.MethodGet, l, resp)
	}
	if resp.ContentLength > max {
		return 0, tooLarge(l, resp.ContentLength, max)
	}
	h := sha1.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(resp.Body, max+1))
	if err != nil {
		return n, transportError(resp.Request.Context(), http.MethodGet, l, err)
	}
	if n > max {
		return n, tooLarge(l, n, max)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != l.Digest {
		return n, forecast.Errorf(forecast.EINVALID, "GET %s: the %d bytes received hash to %s, not to the blob's name", l, n, got)
	}
	return n, nil
}

func tooLarge(l Location, n, max int64) error {
	return forecast.Errorf(forecast.EINVALID, "%s holds %d bytes or more, over the limit of %d bytes", l, n, max)
}

// Exists reports whether the blob l is in its table (HEAD). ENOTFOUND
// when the table itself is missing is not distinguished: false.
func (c *Client) Exists(ctx context.Context, l Location) (bool, error) {
	resp, cancel, err := c.do(ctx, http.MethodHead, blobURL(l), nil, 0, l)
	if err != nil {
		return false, err
	}
	defer cancel()
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, statusError(http.MethodHead, l, resp)
}

// Delete removes the blob l; a missing blob is not an error.
func (c *Client) Delete(ctx context.Context, l Location) error {
	resp, cancel, err := c.do(ctx, http.MethodDelete, blobURL(l), nil, 0, l)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusOK, http.StatusNotFound:
		return nil
	}
	return statusError(http.MethodDelete, l, resp)
}
