package services

import (
	"bytes"
	"context"
	"io"
	"net/http"
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
