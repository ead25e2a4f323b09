package fetch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

func TestFetchLocal(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"MLmodel": "m", "sub/weights.bin": "w"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, loc := range []string{src, "file://" + src} {
		dst := filepath.Join(t.TempDir(), "out")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "stale"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := (Fetcher{}).Fetch(context.Background(), loc, dst); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(dst, "sub", "weights.bin")); err != nil || string(b) != "w" {
			t.Fatalf("%s: weights %q %v", loc, b, err)
		}
		if _, err := os.Stat(filepath.Join(dst, "stale")); !os.IsNotExist(err) {
			t.Fatalf("%s: dst not replaced", loc)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		note, loc string
		f         Fetcher
		code      string
	}{
		{"missing dir", filepath.Join(t.TempDir(), "none"), Fetcher{}, forecast.ENOTFOUND},
		{"dot dot", "/models/../etc", Fetcher{}, forecast.EINVALID},
		{"s3 without store", "s3://b/p", Fetcher{}, forecast.EINVALID},
		{"mlflow-artifacts without destination", "mlflow-artifacts:/1/m", Fetcher{}, forecast.EINVALID},
		{"mlflow-artifacts escaping", "mlflow-artifacts:/../x", Fetcher{ArtifactsDestination: "s3://b/a"}, forecast.EINVALID},
		{"runs uri", "runs:/abc/model", Fetcher{}, forecast.EINVALID},
		{"http", "http://example.com/m", Fetcher{}, forecast.EINVALID},
	} {
		err := tt.f.Fetch(context.Background(), tt.loc, filepath.Join(t.TempDir(), "out"))
		if got := forecast.ErrorCode(err); got != tt.code {
			t.Errorf("%s: %v (code %q), want %q", tt.note, err, got, tt.code)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	f := Fetcher{ArtifactsDestination: "s3://bucket/mlartifacts/"}
	for in, want := range map[string]string{
		"mlflow-artifacts:/1/abc/artifacts/model":                 "s3://bucket/mlartifacts/1/abc/artifacts/model",
		"mlflow-artifacts://127.0.0.1:5000/1/abc/artifacts/model": "s3://bucket/mlartifacts/1/abc/artifacts/model",
		"s3://other/x": "s3://other/x",
	} {
		if got, err := f.Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
