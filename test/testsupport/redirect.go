package testsupport

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// OtherHost is a server on another port (another host to a client) that
// records the headers of every request it gets: the target of a redirect
// a client holding credentials must not follow.
type OtherHost struct {
	URL  string
	mu   sync.Mutex
	seen []http.Header
}

// NewOtherHost starts an OtherHost, stopped when the test ends.
func NewOtherHost(tb testing.TB) *OtherHost {
	tb.Helper()
	o := &OtherHost{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Header.Clone())
		o.mu.Unlock()
		w.Write([]byte("{}"))
	}))
	tb.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

// Requests returns the headers of the requests received so far.
func (o *OtherHost) Requests() []http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]http.Header(nil), o.seen...)
}

// RedirectTo answers every request with a 302 to url plus the request's
// path and query.
func RedirectTo(url string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, url+r.URL.RequestURI(), http.StatusFound)
	}
}
