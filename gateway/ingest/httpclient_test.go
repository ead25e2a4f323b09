package ingest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/carbongate/carbongate/test/testsupport"
)

// TestSameHostRedirects: a redirect on the same host is followed with the
// credentials; one to another host (another port included) fails the
// request, and that host gets nothing.
func TestSameHostRedirects(t *testing.T) {
	t.Parallel()
	other := testsupport.NewOtherHost(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/here", http.StatusFound) })
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "%q", r.Header.Get("auth-token")) })
	mux.Handle("/away", testsupport.RedirectTo(other.URL))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	given := srv.Client()
	c := Caller{Source: "test", Client: SameHostRedirects(given)}
	header := http.Header{"Auth-Token": {"secret"}}
	var token string
	if err := c.Get(context.Background(), srv.URL+"/moved", header, "/moved", &token); err != nil || token != "secret" {
		t.Fatalf("same-host redirect: %q, %v; want it followed with the token", token, err)
	}
	if err := c.Get(context.Background(), srv.URL+"/away", header, "/away", &token); err == nil {
		t.Fatal("a redirect to another host was followed")
	}
	if got := other.Requests(); len(got) != 0 {
		t.Fatalf("the other host got %d requests (auth-token %q)", len(got), got[0].Get("auth-token"))
	}
	if given.CheckRedirect != nil {
		t.Fatal("SameHostRedirects changed the client it was given")
	}
}
