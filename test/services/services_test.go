//go:build interop

package services_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

func TestFreePortDistinct(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 50 {
		p := services.FreePort(t)
		if seen[p] {
			t.Fatalf("FreePort handed out %d twice", p)
		}
		seen[p] = true
	}
}

// TestWeed starts SeaweedFS and round-trips an object through a bucket of
// the test's own, with the test identity and without it.
func TestWeed(t *testing.T) {
	t.Parallel()
	s3 := services.StartWeed(t)
	bucket := s3.Bucket(t)
	body := []byte("carbongate model directory stand-in")
	s3.PutObject(t, bucket, "models/zone-de/MLmodel", body)
	if got := s3.GetObject(t, bucket, "models/zone-de/MLmodel"); !bytes.Equal(got, body) {
		t.Fatalf("GetObject=%q, want %q", got, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, status, err := s3.Do(ctx, http.MethodGet, bucket, "models/zone-de/absent", nil); err != nil || status != http.StatusNotFound {
		t.Fatalf("GET absent key: %d %v, want 404", status, err)
	}
	// Anonymous requests are refused: the S3 config has identities.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s3.Endpoint+"/"+bucket+"/models/zone-de/MLmodel", nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("anonymous GET: %d, want 403", resp.StatusCode)
	}
	// A wrong secret is refused.
	bad := *s3
	bad.SecretKey = "wrong"
	if _, status, err := bad.Do(ctx, http.MethodGet, bucket, "models/zone-de/MLmodel", nil); err != nil || status != http.StatusForbidden {
		t.Fatalf("GET with a wrong secret: %d %v, want 403", status, err)
	}
}
