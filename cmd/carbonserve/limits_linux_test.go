package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/test/services"
)

// Bounds of TestMemoryBoundedUnderLargeBodies, in MiB of the server's RSS.
const (
	// peakRSSBoundMiB bounds the server's peak RSS (VmHWM) through the
	// test's load. Why 160: the idle process is about 20 MiB; the 62 MB
	// bodies are refused unread, so what remains are the valid requests at
	// the largest batch, 8 at once (the default in-flight limit on 2
	// cores): each holds its ~2 MB body, its decoded history (FP32, then
	// float64 twice: 1,024 × 168 values), its forecasts and their JSON,
	// about 10 MiB, so 80 MiB live, and the collector lets the heap grow
	// to about twice the live data before it runs. Before the limits the
	// same load peaked above 1 GiB.
	peakRSSBoundMiB = 160
	// settledRSSSlackMiB is how far above its idle RSS the server must come
	// back within settleTimeout once the load is over.
	settledRSSSlackMiB = 24
	settleTimeout      = 15 * time.Second
)

// TestMemoryBoundedUnderLargeBodies starts a carbonserve process serving a
// production-shaped model (L = 168, H = 96) and sends it, 8 at a time,
// invalid 62 MB bodies (with a Content-Length, then chunked), bodies whose
// declared shape is far beyond the contract, and valid requests of the
// largest batch; the peak RSS must stay under peakRSSBoundMiB, and RSS and
// goroutines must come back near their idle values.
func TestMemoryBoundedUnderLargeBodies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a carbonserve process")
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "DE")
	servetest.Save(t, dir, servetest.Production(t, "carbon-forecaster-DE", "DE", 0))
	p, url := startProcess(t, "--model_dir", dir)
	infer := url + "/v2/models/carbon-forecaster-DE/infer"
	post(t, infer, bytes.NewReader(validBody(1)), -1) // warm up
	idle, idleG := services.ProcStatus(t, p.Pid(), "VmRSS"), goroutines(t, url)
	t.Logf("idle: RSS %d MiB, %d goroutines", idle>>10, idleG)

	const huge = 62 << 20
	body := validBody(1024)
	for _, phase := range []struct {
		name string
		body func() io.Reader
		n    int64 // Content-Length, -1: chunked
		want int
	}{
		{"62 MB invalid, with Content-Length", func() io.Reader { return invalidBody(huge) }, huge, http.StatusRequestEntityTooLarge},
		{"62 MB invalid, chunked", func() io.Reader { return invalidBody(huge) }, -1, http.StatusRequestEntityTooLarge},
		{"shape beyond the contract", hugeShapeBody, -1, http.StatusBadRequest},
		{"valid, B = 1024, 3 rounds", func() io.Reader { return bytes.NewReader(body) }, int64(len(body)), http.StatusOK},
	} {
		for range 3 {
			parallel(8, func() {
				if got := post(t, infer, phase.body(), phase.n); got != phase.want {
					t.Errorf("%s: status %d, want %d", phase.name, got, phase.want)
				}
			})
			if phase.want != http.StatusOK {
				break
			}
		}
		t.Logf("%s: peak RSS %d MiB", phase.name, services.ProcStatus(t, p.Pid(), "VmHWM")>>10)
	}
	peak := services.ProcStatus(t, p.Pid(), "VmHWM")
	if peak>>10 > peakRSSBoundMiB {
		t.Errorf("peak RSS %d MiB, want at most %d MiB", peak>>10, peakRSSBoundMiB)
	}
	rss, g := settle(t, p.Pid(), url, idle+settledRSSSlackMiB<<10, idleG+4)
	t.Logf("settled: RSS %d MiB, %d goroutines", rss>>10, g)
	if rss > idle+settledRSSSlackMiB<<10 || g > idleG+4 {
		t.Logf("memory:\n%s", grepLines(httpGet(t, url+"/metrics"), "go_memstats_"))
		t.Errorf("after %v: RSS %d MiB (idle %d), %d goroutines (idle %d)", settleTimeout, rss>>10, idle>>10, g, idleG)
	}
}

// startProcess builds carbonserve and starts it with args on free ports; it
// returns once the REST and gRPC ports serve the model.
func startProcess(t *testing.T, args ...string) (*services.Proc, string) {
	t.Helper()
	bin := filepath.Join(services.GoBuild(t, "carbonserve"), "carbonserve")
	var url string
	p := services.StartBinary(t, services.Binary{
		Name: "carbonserve", Path: bin, Timeout: time.Minute,
		ArgsFor: func() []string {
			hp, gp := services.FreePort(t), services.FreePort(t)
			url = "http://127.0.0.1:" + strconv.Itoa(hp)
			return append([]string{"--host", "127.0.0.1", "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp),
				"--reload-interval", "0", "--drain-delay", "0s"}, args...)
		},
		Env: []string{"GOMAXPROCS=2"},
		Ready: func(ctx context.Context) error {
			return services.OIPReady(url, "", "carbon-forecaster-DE")(ctx)
		},
	})
	return p, url
}

func parallel(n int, f func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(f)
	}
	wg.Wait()
}

// invalidBody is n bytes of a JSON request that never ends: a history
// whose data runs on past any shape.
func invalidBody(n int64) io.Reader {
	head := `{"inputs":[{"name":"history","datatype":"FP32","shape":[1,168],"data":[`
	return io.MultiReader(strings.NewReader(head), io.LimitReader(repeatReader("312.5,"), n-int64(len(head))))
}

// repeatReader reads s over and over (each Read starts s again: the body
// is meant to be invalid).
type repeatReader string

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r[i%len(r)]
	}
	return len(p), nil
}

// hugeShapeBody declares a history of 10^8 rows with a binary size to match
// (62 GB) and sends none of it.
func hugeShapeBody() io.Reader {
	return strings.NewReader(`{"inputs":[{"name":"history","datatype":"FP32","shape":[100000000,168],"parameters":{"binary_data_size":67200000000}},` +
		`{"name":"start_unix","datatype":"INT64","shape":[100000000,1],"data":[0]}]}`)
}

// validBody is a JSON infer request of b rows for the production shape.
func validBody(b int) []byte {
	h, st := servetest.InputL(b, 168)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"id":"rss","inputs":[{"name":"history","datatype":"FP32","shape":[%d,168],"data":[`, b)
	for i, v := range h {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
	}
	fmt.Fprintf(&buf, `]},{"name":"start_unix","datatype":"INT64","shape":[%d,1],"data":[`, b)
	for i, v := range st {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(strconv.FormatInt(v, 10))
	}
	buf.WriteString(`]}],"outputs":[{"name":"forecast"}]}`)
	return buf.Bytes()
}

var goroutinesRE = regexp.MustCompile(`(?m)^go_goroutines (\d+)$`)

// goroutines reads go_goroutines from the server's /metrics.
func goroutines(t *testing.T, url string) int {
	t.Helper()
	m := goroutinesRE.FindStringSubmatch(httpGet(t, url+"/metrics"))
	if m == nil {
		t.Fatal("/metrics has no go_goroutines")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// settle polls until RSS (KiB) and goroutines are at most the given values,
// or settleTimeout passed, and returns the last readings.
func settle(t *testing.T, pid int, url string, rssKiB int64, gs int) (int64, int) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		rss, g := services.ProcStatus(t, pid, "VmRSS"), goroutines(t, url)
		if (rss <= rssKiB && g <= gs) || time.Now().After(deadline) {
			return rss, g
		}
		time.Sleep(200 * time.Millisecond)
	}
}
