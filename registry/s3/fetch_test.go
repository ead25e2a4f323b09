package s3

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/forecast"
)

// lister is an API whose listing is fixed and whose GetObject must not be
// reached.
type lister struct {
	t    *testing.T
	keys []string
}

func (l lister) ListObjects(ctx context.Context, _ string, _ minio.ListObjectsOptions) <-chan minio.ObjectInfo {
	ch := make(chan minio.ObjectInfo)
	go func() {
		defer close(ch)
		for _, k := range l.keys {
			select {
			case ch <- minio.ObjectInfo{Key: k, Size: 1}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

func (l lister) GetObject(context.Context, string, string, minio.GetObjectOptions) (*minio.Object, error) {
	l.t.Error("GetObject called although a key escapes the destination")
	return nil, forecast.Errorf(forecast.EINTERNAL, "unreachable")
}

// TestFetchRejectsTraversalBeforeDownloading: one bad key fails the whole
// fetch before any object is read, and dst is left untouched.
func TestFetchRejectsTraversalBeforeDownloading(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dst := filepath.Join(root, "models", "DE")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "MLmodel"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"m/../../escape", "m/a/../../../../etc/x", "m//abs"} {
		_, err := Fetch(context.Background(), lister{t, []string{"m/MLmodel", bad}}, "s3://b/m", dst)
		if forecast.ErrorCode(err) != forecast.EINVALID {
			t.Fatalf("%q: err=%v, want EINVALID", bad, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "MLmodel")); string(b) != "old" {
		t.Fatalf("dst changed: %q", b)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "models"))
	if len(ents) != 1 {
		t.Fatalf("leftovers next to dst: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); err == nil {
		t.Fatal("a file escaped")
	}
	if _, err := Fetch(context.Background(), lister{t: t}, "s3://b/m", dst); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("empty prefix: %v, want ENOTFOUND", err)
	}
}

// TestFetchLimitedRefusesBeforeDownloading: a listing over the limits
// fails before any object is read.
func TestFetchLimitedRefusesBeforeDownloading(t *testing.T) {
	t.Parallel()
	keys := []string{"m/MLmodel", "m/a", "m/b"} // 1 byte each
	for _, lim := range []Limits{{MaxObjects: 2}, {MaxBytes: 2}} {
		dst := filepath.Join(t.TempDir(), "out")
		_, err := FetchLimited(context.Background(), lister{t, keys}, "s3://b/m", dst, lim)
		if forecast.ErrorCode(err) != forecast.EINVALID {
			t.Fatalf("%+v: err=%v, want EINVALID", lim, err)
		}
		if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 0 {
			t.Fatalf("%+v: leftovers: %v", lim, ents)
		}
	}
}
