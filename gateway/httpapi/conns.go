package httpapi

import (
	"container/list"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ConnsPerCPU sets the default connection limit: DefaultMaxConns is
// ConnsPerCPU × GOMAXPROCS open connections.
//
// Why 4096: each open connection holds a goroutine and its buffers (about
// 10-40 KiB while a request is read or answered), so the limit bounds what
// many clients can make the gateway hold (a few hundred MiB per CPU at
// most) without ever refusing the connections of a normal deployment,
// where a load balancer or OPA pools them. A lower limit bounds memory
// tighter but costs goodput under overload: refused connections are
// reopened by their clients (BenchmarkOverload measures both).
const ConnsPerCPU = 4096

// maxRefusing bounds the refused connections being answered at once.
const maxRefusing = 64

// DefaultMaxConns is the connection limit used when 0 is asked for.
func DefaultMaxConns() int { return ConnsPerCPU * runtime.GOMAXPROCS(0) }

// ConnLimit bounds the open connections of an http.Server. A connection
// arriving at the limit evicts the connection unused longest: one that has
// sent nothing since it was accepted, or an idle keep-alive one, whichever
// has been so for longer, counting silence ten times idleness. Clients that open connections and send nothing,
// or keep them open, cannot lock out new ones, probes included: silent
// connections go first as they age, while a new client, which sends its
// request within milliseconds, is not evicted by a flood of reconnecting
// keep-alive clients idle for longer, and a well-behaved keep-alive client
// is not evicted by silent connections older than its pauses. When every connection is busy the new one is
// answered 503 with Retry-After and closed, as the in-flight limit does
// for requests, so memory stays bounded under any load.
//
// Wrap the listener with Listener and set the server's ConnState to
// ConnState.
type ConnLimit struct {
	max   int
	plain bool // answer refused connections with a 503 (not over TLS)

	// refusing bounds the goroutines answering refused connections; beyond
	// it a refused connection is closed without an answer.
	refusing chan struct{}

	mu    sync.Mutex
	open  int
	fresh queue                      // accepted, no request begun yet; oldest first
	idle  queue                      // keep-alive, between requests; longest idle first
	conns map[net.Conn]*list.Element // counted connections (nil: active), until StateClosed/StateHijacked

	refused prometheus.Counter
	evicted prometheus.Counter

	now func() time.Time // the clock queue times are read from (tests set their own)
}

// NewConnLimit returns a limit of max open connections (0: DefaultMaxConns).
// plain tells whether the connections speak plain HTTP, in which case a
// refused connection gets a 503 answer; over TLS it is only closed.
func NewConnLimit(max int, plain bool) *ConnLimit {
	if max <= 0 {
		max = DefaultMaxConns()
	}
	l := &ConnLimit{max: max, conns: map[net.Conn]*list.Element{}, refusing: make(chan struct{}, maxRefusing), now: time.Now,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carbongate_http_conns_refused_total",
			Help: "Connections refused at the connection limit (every connection busy): answered 503 with Retry-After and closed.",
		}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carbongate_http_conns_evicted_total",
			Help: "Connections closed at the connection limit to admit a new one: those that never sent a byte first, then idle keep-alive ones.",
		}),
	}
	l.plain = plain
	return l
}

// Collectors returns the limit's metrics.
func (l *ConnLimit) Collectors() []prometheus.Collector {
	return []prometheus.Collector{l.refused, l.evicted}
}

// Listener wraps ln so that each accepted connection is admitted or refused.
func (l *ConnLimit) Listener(ln net.Listener) net.Listener { return &limitListener{ln, l} }

type limitListener struct {
	net.Listener
	l *ConnLimit
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ll.l.admit(c) {
			return c, nil
		}
	}
}

// admit counts c in, evicting at the limit the connection unused longest
// (see longestUnused), or refuses c when every connection is busy.
func (l *ConnLimit) admit(c net.Conn) bool {
	l.mu.Lock()
	var evict net.Conn
	if l.open >= l.max {
		evict = l.longestUnused()
		if evict == nil {
			l.mu.Unlock()
			l.refused.Inc()
			select {
			case l.refusing <- struct{}{}:
				go func() {
					defer func() { <-l.refusing }()
					l.refuse(c)
				}()
			default:
				c.Close()
			}
			return false
		}
		l.forget(evict)
	}
	l.open++
	l.conns[c] = l.fresh.push(c, l.now())
	l.mu.Unlock()
	if evict != nil {
		l.evicted.Inc()
		evict.Close() // outside the lock: over TLS a close writes
	}
	return true
}

// forget uncounts c; under mu.
func (l *ConnLimit) forget(c net.Conn) {
	e, ok := l.conns[c]
	if !ok {
		return
	}
	l.unqueue(e)
	delete(l.conns, c)
	l.open--
}

// unqueue takes e out of the queue holding it; under mu.
func (l *ConnLimit) unqueue(e *list.Element) {
	if e != nil {
		e.Value.(*queued).q.remove(e)
	}
}

// refuse answers a refused connection, then closes it after the client
// has had a moment to read the answer (closing with its request unread
// would reset the connection before the answer arrives).
func (l *ConnLimit) refuse(c net.Conn) {
	defer c.Close()
	if !l.plain {
		return
	}
	c.SetDeadline(time.Now().Add(time.Second))
	body := fmt.Sprintf(`{"error":{"code":"unavailable","message":"overloaded: too many connections, retry later"},"request_id":%q}`, newID())
	answer := fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: %d\r\nContent-Type: application/json\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n%s", RetryAfter, len(body), body)
	if _, err := c.Write(answer); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	buf := make([]byte, 4<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// ConnState tracks fresh and idle connections; set it as the
// http.Server's ConnState.
func (l *ConnLimit) ConnState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.conns[c]
	if !ok {
		return
	}
	switch s {
	case http.StateIdle:
		l.unqueue(e)
		l.conns[c] = l.idle.push(c, l.now())
	case http.StateActive:
		l.unqueue(e)
		l.conns[c] = nil
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
	}
}

// queue is a list of connections in the order they joined it. Each element
// holds the connection and points back to its queue, so that forget finds
// it in O(1).
type queue struct{ l list.List }

type queued struct {
	conn net.Conn
	q    *queue
	at   time.Time // when it joined q
}

// push adds c at the back of q, as having joined it at time at.
func (q *queue) push(c net.Conn, at time.Time) *list.Element {
	return q.l.PushBack(&queued{c, q, at})
}

func (q *queue) remove(e *list.Element) { q.l.Remove(e) }

// front returns the entry longest in q, or nil.
func (q *queue) front() *queued {
	if e := q.l.Front(); e != nil {
		return e.Value.(*queued)
	}
	return nil
}

// silentWeight is how many times a connection that has sent nothing
// counts as more unused than an idle keep-alive one over the same time: a
// real client sends its first request within milliseconds of connecting,
// while a keep-alive client's pauses between requests are its own.
const silentWeight = 10

// longestUnused returns the connection that has gone unused longest: the
// one silent longest since it was accepted, unless the one idle longest
// since its last answer has been idle silentWeight times as long; nil
// when every connection is busy. Under mu.
func (l *ConnLimit) longestUnused() net.Conn {
	f, i := l.fresh.front(), l.idle.front()
	switch {
	case f == nil && i == nil:
		return nil
	case f == nil:
		return i.conn
	case i == nil:
		return f.conn
	}
	now := l.now()
	if now.Sub(i.at) > silentWeight*now.Sub(f.at) {
		return i.conn
	}
	return f.conn
}

// openConns returns the connections counted open.
func (l *ConnLimit) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}
