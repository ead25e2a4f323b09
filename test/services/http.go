package services

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Call sends one request to a service under test within ten seconds and
// returns the body of its answer; anything but 200 fails tb. A non-empty
// body is sent as application/json.
func Call(tb testing.TB, method, url string, body []byte) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s %s: %d %s (%v)", method, url, resp.StatusCode, b, err)
	}
	return b
}

// MetricValue returns the value of series (a name and its labels as the
// Prometheus text exposition writes them, e.g.
// `carbongate_controller_releases_total{kind="job",reason="scheduled"}`)
// in exposition, ok false when it is absent; a value that does not parse
// fails tb.
func MetricValue(tb testing.TB, exposition []byte, series string) (float64, bool) {
	tb.Helper()
	for line := range strings.SplitSeq(string(exposition), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("%s: %v", line, err)
			}
			return f, true
		}
	}
	return 0, false
}
