package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// connServer serves handler behind a ConnLimit of max connections.
func connServer(t *testing.T, max int, handler http.Handler) (string, *ConnLimit) {
	t.Helper()
	lim := NewConnLimit(max, true)
	return serveLimited(t, lim, handler), lim
}

// serveLimited serves handler behind lim and returns the address.
func serveLimited(t *testing.T, lim *ConnLimit, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ConnState: lim.ConnState, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(lim.Listener(ln))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// stepClock is a clock the test moves; the server reads it from its
// goroutines.
type stepClock struct{ ns atomic.Int64 }

func (c *stepClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *stepClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// wantClosed fails the test unless the server has closed c: a read ends
// at the end of the stream (or a reset), not at its deadline.
func wantClosed(t *testing.T, c net.Conn, br *bufio.Reader, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := br.ReadByte()
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s is still open (read: %v)", what, err)
	}
}

// request sends GET path on c (keep-alive) and returns the response.
func request(t *testing.T, c net.Conn, br *bufio.Reader, path string) (*http.Response, []byte) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// waitIdle waits until the limit counts n idle connections.
func waitIdle(t *testing.T, l *ConnLimit, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		idle := l.idle.l.Len()
		l.mu.Unlock()
		if idle == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections, want %d", idle, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConnLimitEvictsIdle(t *testing.T) {
	t.Parallel()
	addr, lim := connServer(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	c1, b1 := dial(t, addr)
	request(t, c1, b1, "/")
	waitIdle(t, lim, 1)
	c2, b2 := dial(t, addr)
	request(t, c2, b2, "/")
	waitIdle(t, lim, 2)
	c3, b3 := dial(t, addr)
	if resp, _ := request(t, c3, b3, "/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("third connection: %d, want 200 (an idle one evicted)", resp.StatusCode)
	}
	// c1, idle longest, was closed; c2 still serves.
	wantClosed(t, c1, b1, "the longest-idle connection")
	if resp, _ := request(t, c2, b2, "/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("second connection: %d", resp.StatusCode)
	}
	if got := testutil.ToFloat64(lim.evicted); got != 1 {
		t.Fatalf("evicted %v, want 1", got)
	}
}

// TestConnLimitEvictsSilentFirst is the reproduction of the idle-connection
// attack: connections that never send a byte used to fill the limit, and
// every new client got 503 until the header timeout. Now they are evicted,
// oldest first, before any keep-alive connection that has been idle for
// less time than they have been silent. The limit's clock is the test's:
// with real time, a loaded machine made the silent connections older than
// a tenth of the keep-alive one's idle second, and the wrong one went (3
// of 80 package runs at load 15).
func TestConnLimitEvictsSilentFirst(t *testing.T) {
	t.Parallel()
	var clk stepClock
	lim := NewConnLimit(3, true)
	lim.now = clk.now
	addr := serveLimited(t, lim, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	kept, bk := dial(t, addr)
	request(t, kept, bk, "/")
	waitIdle(t, lim, 1)
	// The keep-alive one, idle for twenty times as long as the silent ones
	// are old, goes first.
	clk.add(10 * time.Second)
	silent1, b1 := dial(t, addr)
	silent2, _ := dial(t, addr)
	defer silent2.Close()
	waitFor(t, func() bool { return lim.openConns() == 3 })
	clk.add(500 * time.Millisecond)
	c, b := dial(t, addr)
	if resp, _ := request(t, c, b, "/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("new client with young silent connections: %d, want 200", resp.StatusCode)
	}
	wantClosed(t, kept, bk, "the idle keep-alive connection")
	c.Close()
	waitFor(t, func() bool { return lim.openConns() == 2 }) // the silent two
	kept, bk = dial(t, addr)
	request(t, kept, bk, "/")
	waitIdle(t, lim, 1)
	for i := range 2 { // one per silent connection
		c, b := dial(t, addr)
		if resp, _ := request(t, c, b, "/"); resp.StatusCode != http.StatusOK {
			t.Fatalf("new client %d with the limit full of silent connections: %d, want 200", i, resp.StatusCode)
		}
	}
	wantClosed(t, silent1, b1, "the oldest silent connection")
	if resp, _ := request(t, kept, bk, "/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the keep-alive connection was evicted before the silent ones: %d", resp.StatusCode)
	}
}

// TestConnLimitEvictsYoungSilent: silent connections reopened as soon as
// they are closed are all young, yet a new client still gets in.
func TestConnLimitEvictsYoungSilent(t *testing.T) {
	t.Parallel()
	addr, lim := connServer(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 2 {
		c, _ := dial(t, addr)
		defer c.Close()
	}
	waitFor(t, func() bool { return lim.openConns() == 2 })
	c, b := dial(t, addr)
	if resp, _ := request(t, c, b, "/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("new client with the limit full of young silent connections: %d, want 200", resp.StatusCode)
	}
}

func TestConnLimitRefusesWhenAllBusy(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	addr, lim := connServer(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	}))
	for range 2 {
		c, _ := dial(t, addr)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	<-started
	<-started
	c3, b3 := dial(t, addr)
	resp, body := request(t, c3, b3, "/")
	close(release)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("got %d Retry-After %q, want 503 with Retry-After 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	var e struct {
		Error     struct{ Code, Message string }
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "unavailable" || e.RequestID == "" {
		t.Fatalf("body %q: %v", body, err)
	}
	if got := testutil.ToFloat64(lim.refused); got != 1 {
		t.Fatalf("refused %v, want 1", got)
	}
}

func TestConnLimitCountsClosed(t *testing.T) {
	t.Parallel()
	addr, lim := connServer(t, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 5 { // each closes before the next: never over the limit
		c, br := dial(t, addr)
		if resp, _ := request(t, c, br, "/"); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		c.Close()
		waitIdle(t, lim, 0)
		deadline := time.Now().Add(5 * time.Second)
		for lim.openConns() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections counted open after all closed", lim.openConns())
			}
			time.Sleep(time.Millisecond)
		}
	}
	if got := testutil.ToFloat64(lim.evicted) + testutil.ToFloat64(lim.refused); got != 0 {
		t.Fatalf("evicted+refused %v, want 0", got)
	}
}
