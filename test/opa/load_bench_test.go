//go:build interop

package opa

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// loadResult summarises one open-loop run.
type loadResult struct {
	sent, failed int
	p50, p99     time.Duration
}

// openLoad posts body to url at rate requests/s for d, open loop: every
// millisecond it starts the requests that are due by then (each on its
// own goroutine, so a slow answer delays no later request), and each
// request's latency counts from the time it was due, not from when it was
// sent, so a generator or machine that falls behind shows up as latency
// instead of as fewer requests. ok judges a 200 answer's body.
func openLoad(url string, body []byte, rate int, d time.Duration, ok func([]byte) bool) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: 1024}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var (
		mu   sync.Mutex
		lat  []time.Duration
		fail int
		wg   sync.WaitGroup
	)
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent := 0; sent < total; {
		now := <-tick.C
		for ; sent < total; sent++ {
			due := start.Add(time.Duration(sent) * interval)
			if due.After(now) {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
				good := false
				if err == nil {
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					good = rerr == nil && resp.StatusCode == 200 && ok(b)
				}
				el := time.Since(due)
				mu.Lock()
				lat = append(lat, el)
				if !good {
					fail++
				}
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	slices.Sort(lat)
	return loadResult{sent: len(lat), failed: fail, p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
}

// BenchmarkAdmissionLoad (make bench, -benchtime 1x) offers admission
// reviews through a real OPA server with the bundle (http.send to
// carbongate with a 60 s cache) for $CARBONGATE_LOAD_SECONDS (default 60)
// per run: first 1,000 reviews/s, for OPA's CPU time per review (utime +
// stime of the OPA process from /proc/<pid>/stat, before and after the run,
// divided by the reviews sent; goal: at most 0.3 ms, so that 2,000/s fit
// in one core), then $CARBONGATE_LOAD_RATE (default 2,000) reviews/s
// through OPA and as many schedule requests/s straight to carbongate,
// printing p50/p99 and errors of both; the last line is the ratio of the
// p99s (goal: p99 under 20 ms through OPA, zero errors). CPU time is the
// process's own, so other load on the machine moves it far less than the
// latencies; the load average during each run is printed beside it.
func BenchmarkAdmissionLoad(b *testing.B) {
	secs := 60
	if s, err := strconv.Atoi(os.Getenv("CARBONGATE_LOAD_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	d := time.Duration(secs) * time.Second
	rate := 2000
	if r, err := strconv.Atoi(os.Getenv("CARBONGATE_LOAD_RATE")); err == nil && r > 0 {
		rate = r
	}
	opa := services.OPABinary(b)
	bundle := services.BuildOPABundle(b, opa)
	_, carbongate := startCarbongate(b)
	opaProc, opaURL := startOPA(b, opa, bundle, opaConfig{carbongate: carbongate, cacheSeconds: 60})
	review, err := os.ReadFile(filepath.Join("..", "fixtures", "admission", "create-scheduled-eu", "review.json"))
	if err != nil {
		b.Fatal(err)
	}
	schedule := []byte(`{"zones":["AT","DK-DK2","ES","IT-NO","NL","PL","SE"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z"}`)
	allowed := func(body []byte) bool { return bytes.Contains(body, []byte(`"allowed":true`)) }
	decided := func(body []byte) bool { return bytes.Contains(body, []byte(`"decision"`)) }
	// Warm both paths.
	openLoad(opaURL, review, 200, 2*time.Second, allowed)
	openLoad(carbongate+"/v1/schedule", schedule, 200, 2*time.Second, decided)

	cpu := measureCPU(b, opaProc.Pid(), func() loadResult { return openLoad(opaURL, review, cpuRate, d, allowed) })
	testsupport.Goal(b, cpu.perReview() <= 300*time.Microsecond, "admission load OPA CPU per review at %d/s: %.3f ms (%v CPU for %d reviews in %v, %d errors, load average %.1f; goal: <= 0.3 ms)",
		cpuRate, cpu.perReview().Seconds()*1e3, cpu.cpu.Round(10*time.Millisecond), cpu.r.sent, d, cpu.r.failed, cpu.load)
	b.ReportMetric(cpu.perReview().Seconds()*1e6, "opa-cpu-µs/review")

	viaOPA := openLoad(opaURL, review, rate, d, allowed)
	direct := openLoad(carbongate+"/v1/schedule", schedule, rate, d, decided)
	for _, r := range []struct {
		name string
		r    loadResult
	}{{"through OPA (http.send, 60 s cache)", viaOPA}, {"direct /v1/schedule", direct}} {
		fmt.Printf("admission load %-34s %d requests in %v: p50 %v, p99 %v, %d errors\n",
			r.name, r.r.sent, d, r.r.p50.Round(10*time.Microsecond), r.r.p99.Round(10*time.Microsecond), r.r.failed)
	}
	b.ReportMetric(float64(viaOPA.p99.Microseconds()), "opa-p99-µs")
	testsupport.Goal(b, viaOPA.p99 < 20*time.Millisecond, "admission load p99 through OPA / direct: %.1fx (goal: OPA p99 < 20ms, 0 errors)", float64(viaOPA.p99)/float64(direct.p99))
	if viaOPA.failed > 0 || direct.failed > 0 || cpu.r.failed > 0 {
		b.Errorf("errors: %d through OPA, %d direct, %d in the CPU run", viaOPA.failed, direct.failed, cpu.r.failed)
	}
}

// cpuRate is the review rate at which OPA's CPU time per review is
// measured.
const cpuRate = 1000

// cpuRun is one run with the CPU time a process spent during it.
type cpuRun struct {
	r    loadResult
	cpu  time.Duration // utime + stime
	load float64       // 1-minute load average at the end
}

func (c cpuRun) perReview() time.Duration {
	if c.r.sent == 0 {
		return 0
	}
	return c.cpu / time.Duration(c.r.sent)
}

// measureCPU runs run and returns the CPU time process pid spent meanwhile.
func measureCPU(tb testing.TB, pid int, run func() loadResult) cpuRun {
	tb.Helper()
	before := services.ProcCPU(tb, pid)
	r := run()
	c := cpuRun{r: r, cpu: services.ProcCPU(tb, pid) - before}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			c.load, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return c
}
