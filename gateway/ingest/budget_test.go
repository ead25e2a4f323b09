package ingest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
)

// TestAnswerBudget: calls sharing a budget hold at most its bytes of
// answers at once: while one call holds most of it (its answer half
// read), another's large answer is refused with EUNAVAILABLE; once the
// first is done, the budget is whole again and both answers are read.
func TestAnswerBudget(t *testing.T) {
	t.Parallel()
	const size = 600 << 10 // bytes of each answer; the budget holds one
	answer := `{"pad":"` + strings.Repeat("x", size-10) + `"}`
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		if r.URL.Path == "/slow" { // half the answer, then wait
			w.Write([]byte(answer[:len(answer)*5/6]))
			w.(http.Flusher).Flush()
			<-release
			w.Write([]byte(answer[len(answer)*5/6:]))
			return
		}
		w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	read := make(chan struct{}) // closed once the slow call has read 300 KB
	client := &http.Client{Transport: readTransport{base: srv.Client().Transport, path: "/slow", after: 300 << 10, read: read}}
	c := Caller{Source: "up", Client: client, Timeout: time.Minute, Budget: oip.NewBodyBudget(1<<20, 0)}
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		var pad struct{ Pad string }
		slow <- c.Get(ctx, srv.URL+"/slow", nil, "/slow", &pad)
	}()
	// Having read 300 KB, the slow call holds 512 KiB of the budget: a
	// second 600 KB answer cannot fit.
	select {
	case <-read:
	case err := <-slow:
		t.Fatalf("the slow call ended early: %v", err)
	}
	var pad struct{ Pad string }
	err := c.Get(ctx, srv.URL+"/fast", nil, "/fast", &pad)
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("a second answer while the budget is held: %v, want EUNAVAILABLE naming the budget", err)
	}
	once.Do(func() { close(release) })
	if err := <-slow; err != nil {
		t.Fatalf("the slow call: %v", err)
	}
	if err := c.Get(ctx, srv.URL+"/fast", nil, "/fast", &pad); err != nil || len(pad.Pad) != size-10 {
		t.Fatalf("after the slow call, the budget is not whole again: %v", err)
	}
}

// readTransport closes read once the answer to path has been read past
// after bytes.
type readTransport struct {
	base  http.RoundTripper
	path  string
	after int
	read  chan struct{}
}

func (t readTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && r.URL.Path == t.path {
		resp.Body = &countingBody{ReadCloser: resp.Body, t: t}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	t    readTransport
	n    int
	done bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.n += n; b.n >= b.t.after && !b.done {
		b.done = true
		close(b.t.read)
	}
	return n, err
}
