package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// BenchmarkOverload offers a carbongate process (built from ./cmd/carbongate,
// bundled data, replay clock, access log off) 20,000 POST /v1/schedule
// requests/s open loop for 10 s (2 s with -short), with the default limits
// and with both limits off. The gateway runs on one core (GOMAXPROCS=1,
// pinned with taskset when there is one), where it serves about half that,
// so that the load generator has the other core and the overload is the
// gateway's. It prints the gateway's peak RSS (VmHWM of
// /proc/<pid>/status), the share of requests shed with 503 + Retry-After,
// the goodput and the latency of the answered requests.
func BenchmarkOverload(b *testing.B) {
	dur := 10 * time.Second
	if testing.Short() {
		dur = 2 * time.Second
	}
	bin := buildGateway(b)
	for _, rate := range []int{20000} {
		for _, bc := range []struct {
			name    string
			args    []string // more gateway flags
			limited bool     // the goal applies: no request left to time out
		}{
			{"limits=default", nil, true},
			{"limits=default,max-conns=1024", []string{"--max-conns", "1024"}, true},
			{"limits=off", []string{"--max-inflight", "1000000", "--max-backlog", "-1", "--max-conns", "1000000"}, false},
		} {
			name := fmt.Sprintf("rate=%d/%s", rate, bc.name)
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					gw := startGateway(b, bin, bc.args...)
					before := services.ProcStatus(b, gw.pid, "VmRSS")
					r := offer(gw.addr, "/v1/schedule", []byte(benchBody), rate, dur)
					peak := services.ProcStatus(b, gw.pid, "VmHWM")
					gw.stop()
					shedShare := float64(r.shed) / float64(r.sent)
					b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
					b.ReportMetric(shedShare, "shed-share")
					b.ReportMetric(float64(r.ok)/r.elapsed.Seconds(), "ok/s")
					testsupport.Goal(b, !bc.limited || r.errs+r.expired == 0, "overload %s: %d requests offered at %d/s for %v: %d ok (%.0f/s, p50 %v, p99 %v), "+
						"%d shed with 503 (share %.3f, p50 %v; %d without Retry-After), %d other statuses, %d transport errors, %d expired unsent after %v; "+
						"%d connections, last answer after %v; gateway RSS %.1f MiB before, peak (VmHWM) %.1f MiB (goal with limits: none left to time out)",
						name, r.sent, rate, dur, r.ok, float64(r.ok)/r.elapsed.Seconds(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond),
						r.shed, shedShare, r.shedP50.Round(time.Microsecond), r.noRetryAfter, r.other, r.errs, r.expired, offerTimeout,
						r.conns, r.elapsed.Round(time.Millisecond), float64(before)/1024, float64(peak)/1024)
				}
			})
		}
	}
}

// overloadResult counts the answers of an open-loop run.
type overloadResult struct {
	sent, ok, shed, other, errs, expired, noRetryAfter int64
	conns                                              int64         // connections opened
	elapsed                                            time.Duration // until the last answer
	p50, p99                                           time.Duration // of the 200s, from each request's scheduled send time
	shedP50                                            time.Duration // of the 503s
}

// Bounds of the load generator.
const (
	offerTimeout  = 5 * time.Second // a request not answered this long after its scheduled time counts as lost
	offerMaxConns = 4096
)

// offer sends rate POST requests/s of body to http://addr+path for dur,
// open loop: every millisecond the requests that are due join a queue,
// whatever the answers' latency. It speaks HTTP/1.1 itself over keep-alive
// connections, so that the generator, which shares the machine with the
// gateway, costs little CPU: a connection takes the next queued request,
// writes it and reads the answer, and while requests wait more connections
// are opened, up to offerMaxConns. A request still queued offerTimeout after
// its scheduled time is dropped and counted as expired.
func offer(addr, path string, body []byte, rate int, dur time.Duration) overloadResult {
	req := []byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, addr, len(body), body))
	n := int(dur.Seconds() * float64(rate))
	queue := make(chan time.Time, n)
	var (
		r       overloadResult
		cnt     [6]atomic.Int64 // ok, shed, other, errs, expired, noRetryAfter
		conns   atomic.Int64
		mu      sync.Mutex
		latency = make([]time.Duration, 0, n)
		shedLat = make([]time.Duration, 0, n)
		wg      sync.WaitGroup
	)
	worker := func() {
		var c net.Conn
		var br *bufio.Reader
		defer func() {
			if c != nil {
				c.Close()
			}
		}()
		for at := range queue {
			if time.Since(at) > offerTimeout {
				cnt[4].Add(1)
				continue
			}
			if c == nil {
				var err error
				if c, err = net.DialTimeout("tcp", addr, offerTimeout); err != nil {
					cnt[3].Add(1)
					c = nil
					continue
				}
				conns.Add(1)
				br = bufio.NewReaderSize(c, 16<<10)
			}
			c.SetDeadline(at.Add(offerTimeout))
			status, retryAfter, keep, err := roundTrip(c, br, req)
			if err != nil || !keep {
				c.Close()
				c = nil
			}
			switch {
			case err != nil:
				cnt[3].Add(1)
			case status == http.StatusOK:
				cnt[0].Add(1)
				lat := time.Since(at)
				mu.Lock()
				latency = append(latency, lat)
				mu.Unlock()
			case status == http.StatusServiceUnavailable:
				cnt[1].Add(1)
				lat := time.Since(at)
				mu.Lock()
				shedLat = append(shedLat, lat)
				mu.Unlock()
				if !retryAfter {
					cnt[5].Add(1)
				}
			default:
				cnt[2].Add(1)
			}
		}
	}
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	workers := 0
	for i := 0; i < n; {
		due := min(n, int(time.Since(start)/interval)+1)
		for ; i < due; i++ {
			queue <- start.Add(time.Duration(i) * interval)
		}
		// Open connections while requests wait, a few per tick.
		for k := 0; k < 64 && len(queue) > 0 && workers < offerMaxConns; k++ {
			workers++
			wg.Go(worker)
		}
		time.Sleep(time.Millisecond)
	}
	close(queue)
	wg.Wait()
	r.elapsed = time.Since(start)
	r.sent, r.conns = int64(n), conns.Load()
	r.ok, r.shed, r.other, r.errs, r.expired, r.noRetryAfter = cnt[0].Load(), cnt[1].Load(), cnt[2].Load(), cnt[3].Load(), cnt[4].Load(), cnt[5].Load()
	if len(latency) > 0 {
		slices.Sort(latency)
		r.p50, r.p99 = latency[len(latency)/2], latency[len(latency)*99/100]
	}
	if len(shedLat) > 0 {
		slices.Sort(shedLat)
		r.shedP50 = shedLat[len(shedLat)/2]
	}
	return r
}

// roundTrip writes req on c and reads the response: its status, whether it
// has a Retry-After header, whether the connection stays open. The body,
// which must have a Content-Length, is discarded.
func roundTrip(c net.Conn, br *bufio.Reader, req []byte) (status int, retryAfter, keep bool, err error) {
	if _, err := c.Write(req); err != nil {
		return 0, false, false, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, false, false, fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, false, err
	}
	length, keep := -1, true
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, false, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, false, false, err
			}
		case bytes.EqualFold(name, []byte("Retry-After")):
			retryAfter = true
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			keep = false
		}
	}
	if length < 0 {
		return 0, false, false, fmt.Errorf("status %d without Content-Length", status)
	}
	if _, err := br.Discard(length); err != nil {
		return 0, false, false, err
	}
	return status, retryAfter, keep, nil
}

// buildGateway builds ./cmd/carbongate into a temp dir.
func buildGateway(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/carbongate")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/carbongate: %v\n%s", err, out)
	}
	return filepath.Join(dir, "carbongate")
}

type gatewayProc struct {
	addr string
	pid  int
	stop func()
}

// startGateway starts bin on a free loopback port and waits until /readyz
// answers 200. stop kills it; so does the end of the benchmark or of the
// test binary.
func startGateway(b *testing.B, bin string, more ...string) gatewayProc {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"--addr", addr, "--clock", "replay", "--replay-start", "2021-06-01T00:00:00Z",
		"--drain-delay", "0s", "--access-log=false", "--log-level", "warn"}
	args = append(args, more...)
	cmd := exec.Command(bin, args...)
	if taskset, err := exec.LookPath("taskset"); err == nil {
		cmd = exec.Command(taskset, append([]string{"-c", "0", bin}, args...)...)
	}
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	b.Cleanup(stop)
	url := "http://" + addr
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := c.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("carbongate not ready within a minute: %v\n%s", err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.CloseIdleConnections()
	return gatewayProc{addr: addr, pid: cmd.Process.Pid, stop: stop}
}
