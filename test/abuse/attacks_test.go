package abuse

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sizes of the connection attacks. Every attack stays on 127.0.0.1.
const (
	slowHeaderConns = 200 // below maxConns: the connection cap is the idle attack's
	slowBodyConns   = 180 // more than the gateway's 128 in-flight slots on 2 CPUs
	slowBodyLength  = 60000
	idleConns       = maxConns + 64
	keepAliveConns  = 2 * maxConns
)

// gatewayAttacks is the attack set of carbongate.
func gatewayAttacks(g *gateway) []attack {
	reviewCut := g.review[:len(g.review)/2]
	return []attack{
		{name: "slow-headers", note: fmt.Sprintf("%d connections send a request's headers at 1 byte/s", slowHeaderConns),
			run: slowHeaders(slowHeaderConns), wantHeld: slowHeaderConns * 9 / 10},
		{name: "slow-bodies", shedding: true,
			note: fmt.Sprintf("%d connections POST to the schedule, admission and registry routes with Content-Length %d, then send 1 byte/s", slowBodyConns, slowBodyLength),
			run:  slowBodies(slowBodyConns, schedulePath, admissionPath, registryWrite), wantHeld: slowBodyConns * 9 / 10},
		{name: "idle-connections", shedding: true,
			note: fmt.Sprintf("%d connections (--max-conns %d) that never send a byte, reopened when closed", idleConns, maxConns),
			run:  idle(idleConns), wantHeld: maxConns * 9 / 10},
		{name: "keepalive-flood", note: fmt.Sprintf("%d keep-alive connections (--max-conns %d), each sending GET /v1/zones about once a second", keepAliveConns, maxConns),
			run: keepAliveFlood(keepAliveConns, "/v1/zones"), wantHeld: maxConns * 9 / 10},
		{name: "oversized-bodies", note: "8 senders stream JSON bodies over the limits, 50/s: 1 MiB to /v1/schedule (limit 64 KiB), 2 MiB to the registry (limit 1 MiB), 4 MiB to the webhook (limit 3 MiB)",
			run: oversized(8, 50, []sized{{schedulePath, `{"zones":["`, 1 << 20}, {registryWrite, `{"name":"`, 2 << 20}, {admissionPath, `{"apiVersion":"`, 4 << 20}})},
		{name: "truncated-bodies", note: "8 senders send half of a body, half-close and wait for the answer",
			run: truncated(8, 200, map[string][]byte{schedulePath: scheduleBody[:len(scheduleBody)/2], admissionPath: reviewCut})},
		{name: "malformed-json", note: "4 senders POST malformed scheduling requests, 200/s",
			run: malformed(4, 200, schedulePath, malformedSchedules())},
		{name: "malformed-admission", note: "4 senders POST malformed AdmissionReviews, 200/s",
			run: malformed(4, 200, admissionPath, malformedReviews(g.review))},
		{name: "casdk-amplification", note: "12 senders ask the Carbon Aware SDK API for a year of a location given 100 times, of 8 locations and of 12, 40/s",
			run: amplified(12, 40)},
	}
}

// serveAttacks is the attack set of carbonserve.
func serveAttacks(s *server) []attack {
	return []attack{
		{name: "slow-headers", note: fmt.Sprintf("%d connections send a request's headers at 1 byte/s", slowHeaderConns),
			run: slowHeaders(slowHeaderConns), wantHeld: slowHeaderConns * 9 / 10},
		{name: "slow-bodies", note: fmt.Sprintf("%d connections POST infer requests with Content-Length %d, then send 1 byte/s", slowBodyConns, slowBodyLength),
			run: slowBodies(slowBodyConns, inferPath), wantHeld: slowBodyConns * 9 / 10},
		{name: "idle-connections", note: fmt.Sprintf("%d connections that never send a byte", idleConns),
			run: idle(idleConns), wantHeld: idleConns * 9 / 10},
		{name: "keepalive-flood", note: fmt.Sprintf("%d keep-alive connections, each sending GET /v2/health/ready about once a second", keepAliveConns),
			run: keepAliveFlood(keepAliveConns, "/v2/health/ready"), wantHeld: keepAliveConns * 9 / 10},
		{name: "oversized-bodies", note: "12 senders at once stream 24 MiB infer bodies (under the 64 MiB REST limit, far over any valid request)",
			run: oversized(12, 0, []sized{{inferPath, `{"id":"`, 24 << 20}})},
		{name: "truncated-bodies", note: "8 senders send half of an infer body, half-close and wait for the answer",
			run: truncated(8, 200, map[string][]byte{inferPath: s.inferBody[:len(s.inferBody)/2]})},
		{name: "malformed-oip", note: "4 senders POST malformed infer requests, 200/s",
			run: malformedOIP(4, 200)},
		{name: "malformed-grpc", note: "2 senders send malformed ModelInfer messages, 100/s",
			run: malformedGRPC(s.grpcAddr, 2, 100)},
	}
}

// ---- connection attacks ---------------------------------------------------

// hold runs n workers, each keeping one connection to tg open with use
// (which returns when the connection is over) and opening another after
// backoff, until ctx ends. The workers start spread over the first second
// (as n clients would), so their connections do not all time out, and
// reconnect, in the same instant.
func hold(ctx context.Context, tg *target, tl *tally, n int, backoff time.Duration, use func(ctx context.Context, c net.Conn)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sleep(ctx, time.Duration(i)*time.Second/time.Duration(n))
			d := net.Dialer{Timeout: 2 * time.Second}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", tg.addr)
				if err != nil {
					if ctx.Err() == nil {
						tl.add("dial errors")
					}
				} else {
					tl.add("connections opened")
					release := tl.hold()
					stop := context.AfterFunc(ctx, func() { c.Close() })
					use(ctx, c)
					stop()
					c.Close()
					release()
				}
				sleep(ctx, backoff)
			}
		})
	}
	wg.Wait()
}

// answered reads the status line the server sends on c, if any, and
// counts it; it returns when the server closes c (or ctx ends).
func answered(tl *tally, c net.Conn) {
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err == nil {
		tl.add("answered " + statusOfLine(line))
	}
	io.Copy(io.Discard, br)
}

func statusOfLine(line string) string {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "garbage"
	}
	return f[1]
}

// trickle writes p then one byte of more per second until a write fails or
// ctx ends.
func trickle(ctx context.Context, c net.Conn, p []byte, more byte) {
	if _, err := c.Write(p); err != nil {
		return
	}
	for sleep(ctx, time.Second) {
		if _, err := c.Write([]byte{more}); err != nil {
			return
		}
	}
}

// slowHeaders: slowloris, headers that never end.
func slowHeaders(n int) func(context.Context, *target, *tally) {
	return func(ctx context.Context, tg *target, tl *tally) {
		hold(ctx, tg, tl, n, 100*time.Millisecond, func(ctx context.Context, c net.Conn) {
			go answered(tl, c)
			trickle(ctx, c, []byte("GET /healthz HTTP/1.1\r\nHost: "+tg.addr+"\r\nX-Slow: "), 'a')
		})
	}
}

// slowBodies: complete headers announcing slowBodyLength bytes, then a
// byte a second, spread over paths.
func slowBodies(n int, paths ...string) func(context.Context, *target, *tally) {
	return func(ctx context.Context, tg *target, tl *tally) {
		var i int
		var mu sync.Mutex
		hold(ctx, tg, tl, n, 100*time.Millisecond, func(ctx context.Context, c net.Conn) {
			mu.Lock()
			path := paths[i%len(paths)]
			i++
			mu.Unlock()
			go answered(tl, c)
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, tg.addr, slowBodyLength)
			trickle(ctx, c, []byte(head), ' ')
		})
	}
}

// idle: connections that never send.
func idle(n int) func(context.Context, *target, *tally) {
	return func(ctx context.Context, tg *target, tl *tally) {
		hold(ctx, tg, tl, n, 100*time.Millisecond, func(ctx context.Context, c net.Conn) { answered(tl, c) })
	}
}

// keepAliveFlood: more keep-alive clients than the connection cap, each
// sending a request about once a second on its connection and reopening
// it when the server closes it.
func keepAliveFlood(n int, path string) func(context.Context, *target, *tally) {
	return func(ctx context.Context, tg *target, tl *tally) {
		req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + tg.addr + "\r\n\r\n")
		hold(ctx, tg, tl, n, 500*time.Millisecond, func(ctx context.Context, c net.Conn) {
			br := bufio.NewReader(c)
			for {
				if _, err := c.Write(req); err != nil {
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				tl.add("answered " + strconv.Itoa(resp.StatusCode))
				if resp.Close || !sleep(ctx, time.Duration(500+rand.IntN(1000))*time.Millisecond) {
					return
				}
			}
		})
	}
}

// ---- request attacks ------------------------------------------------------

// paced runs workers that each call one until ctx ends, all together at
// most rate calls a second (0: unpaced).
func paced(ctx context.Context, workers, rate int, one func(ctx context.Context, i int)) {
	var tick <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		tick = t.C
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n int
	for range workers {
		wg.Go(func() {
			for {
				if tick != nil {
					select {
					case <-ctx.Done():
						return
					case <-tick:
					}
				} else if ctx.Err() != nil {
					return
				}
				mu.Lock()
				i := n
				n++
				mu.Unlock()
				one(ctx, i)
			}
		})
	}
	wg.Wait()
}

// rawRequest dials tg, writes head, lets body write the body, and returns
// the status line the server answers within wait ("" and the error when
// none).
func rawRequest(ctx context.Context, addr, head string, body func(c net.Conn), wait time.Duration) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := io.WriteString(c, head); err != nil {
		return "", err
	}
	go body(c)
	c.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return statusOfLine(line), nil
}

// sized is a JSON body of size bytes: prefix, then one long string, so a
// parser cannot refuse it before the end.
type sized struct {
	path, prefix string
	size         int
}

// oversized streams bodies of the given sizes as fast as the server reads
// them; each must be refused (413) or shed (503), never answered
// otherwise: a server that answers anything else has buffered the body.
func oversized(workers, rate int, bodies []sized) func(context.Context, *target, *tally) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	return func(ctx context.Context, tg *target, tl *tally) {
		paced(ctx, workers, rate, func(ctx context.Context, i int) {
			b := bodies[i%len(bodies)]
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", b.path, tg.addr, b.size)
			status, err := rawRequest(ctx, tg.addr, head, func(c net.Conn) {
				if _, err := io.WriteString(c, b.prefix); err != nil {
					return
				}
				for sent := len(b.prefix); sent < b.size; sent += len(chunk) {
					if _, err := c.Write(chunk[:min(len(chunk), b.size-sent)]); err != nil {
						return
					}
				}
			}, 10*time.Second)
			switch {
			case ctx.Err() != nil:
			case err != nil:
				tl.add("no answer (" + errKind(err) + ")")
			case status == "413" || status == "503":
				tl.add("answered " + status)
			default:
				tl.violation("oversized body answered "+status, fmt.Sprintf("%d bytes to %s", b.size, b.path))
			}
		})
	}
}

// truncated sends half a body (Content-Length says twice that), closes
// its sending side and wants an error answer: the server knows the body
// will never be complete.
func truncated(workers, rate int, cuts map[string][]byte) func(context.Context, *target, *tally) {
	type cut struct {
		path string
		body []byte
	}
	var all []cut
	for p, b := range cuts {
		all = append(all, cut{p, b})
	}
	return func(ctx context.Context, tg *target, tl *tally) {
		paced(ctx, workers, rate, func(ctx context.Context, i int) {
			c := all[i%len(all)]
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", c.path, tg.addr, 2*len(c.body))
			status, err := rawRequest(ctx, tg.addr, head, func(conn net.Conn) {
				if _, err := conn.Write(c.body); err == nil {
					conn.(*net.TCPConn).CloseWrite()
				}
			}, 3*time.Second)
			switch {
			case ctx.Err() != nil:
			case err != nil:
				tl.violation("truncated body got no answer", fmt.Sprintf("%s: %v", c.path, errKind(err)))
			case strings.HasPrefix(status, "4"):
				tl.add("answered " + status)
			default:
				tl.violation("truncated body answered "+status, c.path)
			}
		})
	}
}

// malformedBody is a request that must be answered with a 4xx (or, for a
// well-formed envelope around a bad object, a 200 carrying the refusal).
type malformedBody struct {
	note        string
	contentType string // "" = application/json
	body        []byte
	header      map[string]string
}

// malformed POSTs the bodies in turn over keep-alive connections; any
// transport failure or 5xx is a violation.
func malformed(workers, rate int, path string, bodies []malformedBody) func(context.Context, *target, *tally) {
	return func(ctx context.Context, tg *target, tl *tally) {
		hc := keepAlive.client()
		defer hc.CloseIdleConnections()
		paced(ctx, workers, rate, func(ctx context.Context, i int) {
			m := bodies[i%len(bodies)]
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+tg.addr+path, bytes.NewReader(m.body))
			if err != nil {
				tl.violation("building request", err.Error())
				return
			}
			req.Header.Set("Content-Type", cmp.Or(m.contentType, "application/json"))
			for k, v := range m.header {
				req.Header.Set(k, v)
			}
			resp, err := hc.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					tl.violation("malformed request got no answer", m.note+": "+errKind(err))
				}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				tl.violation(fmt.Sprintf("malformed request answered %d", resp.StatusCode), m.note)
				return
			}
			tl.add("answered " + strconv.Itoa(resp.StatusCode))
		})
	}
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// keptOpen sends, on one connection per path, half of a body (its
// Content-Length says twice that) and keeps the connection open without
// sending more. The server cannot know that the rest will never come, but
// when its read timeout passes it must answer (408 or another 4xx) rather
// than close the connection without a word. It starts at once and runs
// alongside the attacks (the wait is the servers' read timeout, 10 s for
// carbongate and 30 s for carbonserve); check, run last, waits for it.
type keptOpen struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	got map[string]string // path → what happened
	bad map[string]bool
}

func startKeptOpen(addr string, cuts map[string][]byte) *keptOpen {
	k := &keptOpen{got: map[string]string{}, bad: map[string]bool{}}
	for path, body := range cuts {
		k.wg.Go(func() {
			t0 := time.Now()
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, 2*len(body))
			status, err := rawRequest(context.Background(), addr, head, func(c net.Conn) { c.Write(body) }, keptOpenWait)
			el := time.Since(t0).Round(100 * time.Millisecond)
			k.mu.Lock()
			defer k.mu.Unlock()
			switch {
			case err != nil:
				k.got[path], k.bad[path] = fmt.Sprintf("no answer: %s after %v", errKind(err), el), true
			case !strings.HasPrefix(status, "4"):
				k.got[path], k.bad[path] = fmt.Sprintf("answered %s after %v", status, el), true
			default:
				k.got[path] = fmt.Sprintf("answered %s after %v", status, el)
			}
		})
	}
	return k
}

// keptOpenWait bounds the wait for an answer: above the servers' read
// timeouts.
const keptOpenWait = 40 * time.Second

func (k *keptOpen) check(t *testing.T) {
	k.wg.Wait()
	for path, got := range k.got {
		t.Logf("%s: half a body, connection kept open: %s", path, got)
		if k.bad[path] {
			t.Errorf("%s: a body shorter than its Content-Length on a connection kept open got %s, want a 4xx (408) once the server stops waiting", path, got)
		}
	}
}
