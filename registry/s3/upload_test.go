package s3_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry/s3"
)

// failingWriter fails the put of key fail and records removals.
type failingWriter struct {
	fail    string
	put     []string
	removed []string
}

func (f *failingWriter) FPutObject(_ context.Context, _, key, _ string, _ minio.PutObjectOptions) (minio.UploadInfo, error) {
	if key == f.fail {
		return minio.UploadInfo{}, minio.ErrorResponse{Code: "InternalError", StatusCode: 500}
	}
	f.put = append(f.put, key)
	return minio.UploadInfo{Key: key}, nil
}

func (f *failingWriter) RemoveObject(_ context.Context, _, key string, _ minio.RemoveObjectOptions) error {
	f.removed = append(f.removed, key)
	return nil
}

// TestUploadFailureCleansUp: when a put fails midway the objects already
// written are removed, so no partial model directory stays behind.
func TestUploadFailureCleansUp(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := &failingWriter{fail: "p/c"}
	_, err := s3.Upload(context.Background(), w, dir, "s3://b/p")
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("err=%v, want unavailable", err)
	}
	if !slices.Equal(w.put, []string{"p/a", "p/b"}) || !slices.Equal(w.removed, w.put) {
		t.Fatalf("put %q, removed %q", w.put, w.removed)
	}
}
