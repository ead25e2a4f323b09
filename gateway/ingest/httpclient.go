package ingest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// maxRedirects is how many redirects a request follows, as net/http's
// default.
const maxRedirects = 10

// SameHostRedirects returns a copy of c (a new http.Client when c is nil)
// that follows a redirect only to the scheme and host (port included) of
// the request it started from, at most maxRedirects of them. The vendors'
// requests carry credentials in headers (Electricity Maps' auth-token,
// which net/http copies to any host; WattTime's Authorization, which it
// copies to the same host name on another port): a redirect elsewhere
// fails the request instead of handing them over. c's own CheckRedirect,
// if any, is replaced.
func SameHostRedirects(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		cp := *c
		out = &cp
	}
	out.CheckRedirect = checkSameHost
	return out
}

func checkSameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	from := via[0].URL
	if req.URL.Scheme != from.Scheme || !strings.EqualFold(req.URL.Host, from.Host) {
		return errCrossHost
	}
	return nil
}

var errCrossHost = errors.New("a redirect to another host is not followed: the request carries credentials")
