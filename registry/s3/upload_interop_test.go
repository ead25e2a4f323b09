//go:build interop

package s3_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry/s3"
	"github.com/carbongate/carbongate/test/services"
)

// TestUploadFetchRoundTrip: a model directory uploaded with Upload comes
// back byte for byte with Fetch from a real SeaweedFS; an upload
// with wrong credentials fails and leaves nothing.
func TestUploadFetchRoundTrip(t *testing.T) {
	w := services.StartWeed(t)
	c := client(t, w)
	bucket := w.Bucket(t)
	src := t.TempDir()
	files := map[string]string{"MLmodel": "flavors: {}\n", "data/weights.bin": "\x00\x01\x02", "README": "r"}
	for name, body := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	uri := "s3://" + bucket + "/models/carbon-forecaster-DE/1"
	keys, err := s3.Upload(ctx, c, src, uri)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"models/carbon-forecaster-DE/1/MLmodel", "models/carbon-forecaster-DE/1/README", "models/carbon-forecaster-DE/1/data/weights.bin"}
	if slices.Sort(keys); !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	dst := filepath.Join(t.TempDir(), "back")
	if _, err := s3.Fetch(ctx, c, uri, dst); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name))); err != nil || string(b) != body {
			t.Fatalf("%s: %q %v, want %q", name, b, err, body)
		}
	}
	if err := s3.Remove(ctx, c, uri, keys); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Fetch(ctx, c, uri, dst); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("fetch after Remove: %v, want not found", err)
	}
	bad, err := s3.NewClient(s3.Config{Endpoint: w.Endpoint, AccessKey: w.AccessKey, SecretKey: "wrong" + w.SecretKey, Region: w.Region})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Upload(ctx, bad, src, uri); forecast.ErrorCode(err) != forecast.EUNAUTHORIZED {
		t.Fatalf("upload with a wrong secret: %v, want unauthorized", err)
	}
	if _, err := s3.Fetch(ctx, c, uri, dst); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("fetch after a refused upload: %v, want not found (nothing written)", err)
	}
}
