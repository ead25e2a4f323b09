package fetch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
		if err := (Fetcher{Sources: []string{src}}).Fetch(context.Background(), loc, dst); err != nil {
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
		{"missing dir", filepath.Join(t.TempDir(), "none"), Fetcher{Sources: []string{"/"}}, forecast.ENOTFOUND},
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

// tree writes files (name → mode) holding one byte each under a new
// directory and returns it.
func tree(t *testing.T, files map[string]os.FileMode) string {
	t.Helper()
	root := t.TempDir()
	for name, mode := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestFetchAllowedSources: only locations under ArtifactsDestination or
// Sources are copied; the rest is EINVALID and writes nothing.
// TestFetchCrateBlobTable: a blob table is not a directory.
func TestFetchCrateBlobTable(t *testing.T) {
	t.Parallel()
	f := Fetcher{Sources: []string{"crate+blob://crate:4200/models"}}
	err := f.Fetch(context.Background(), "crate+blob://crate:4200/models", filepath.Join(t.TempDir(), "out"))
	if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), "names a blob table") {
		t.Fatalf("Fetch(table) = %v, want EINVALID naming the table", err)
	}
}

func TestFetchAllowedSources(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	models := filepath.Join(base, "models")
	for _, d := range []string{"models/DE", "models-old/DE", "dest/1/m"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, d, "MLmodel"), []byte("m"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(base, filepath.Join(models, "escape")); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(base, "dest")
	ok := Fetcher{ArtifactsDestination: dest, Sources: []string{"file://" + models, "s3://b/models"}}
	crate := Fetcher{Sources: []string{"crate+blob://crate:4200/models"}}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		note, loc string
		f         Fetcher
		allowed   bool
	}{
		{"under a source", filepath.Join(models, "DE"), ok, true},
		{"a source itself", models, ok, true},
		{"under the artifacts destination", "mlflow-artifacts:/1/m", ok, true},
		{"the destination's path", filepath.Join(dest, "1", "m"), ok, true},
		{"nothing configured", filepath.Join(models, "DE"), Fetcher{}, false},
		{"only s3 configured", filepath.Join(models, "DE"), Fetcher{Sources: []string{"s3://b/models"}}, false},
		{"a sibling sharing the prefix", filepath.Join(base, "models-old", "DE"), ok, false},
		{"a symlink out of a source", filepath.Join(models, "escape", "models-old", "DE"), ok, false},
		{"etc", "/etc", ok, false},
		{"s3 sibling prefix", "s3://b/models-old/DE", ok, false},
		{"s3 other bucket", "s3://c/models/DE", ok, false},
		{"crate blob not configured", "crate+blob://crate:4200/models/" + sha, ok, false},
		{"crate blob other table", "crate+blob://crate:4200/other/" + sha, crate, false},
		{"crate blob other host", "crate+blob://evil:4200/models/" + sha, crate, false},
		{"crate blob over https", "crate+blobs://crate:4200/models/" + sha, crate, false},
	} {
		t.Run(tc.note, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			err := tc.f.Fetch(context.Background(), tc.loc, dst)
			if tc.allowed {
				if err != nil {
					t.Fatalf("Fetch(%s): %v", tc.loc, err)
				}
				return
			}
			if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), "outside the allowed artifact sources") {
				t.Fatalf("Fetch(%s) = %v, want EINVALID: outside the allowed sources", tc.loc, err)
			}
			if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 0 {
				t.Fatalf("a refused fetch left %v", ents)
			}
		})
	}
}

// TestFetchLimits: a directory over MaxFiles or MaxBytes is EINVALID and
// its partial copy is removed; dst keeps what it held.
func TestFetchLimits(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]os.FileMode{"MLmodel": 0o644, "a/1": 0o644, "a/2": 0o644})
	for _, f := range []Fetcher{
		{Sources: []string{src}, MaxFiles: 2},
		{Sources: []string{src}, MaxBytes: 2},
	} {
		parent := t.TempDir()
		dst := filepath.Join(parent, "out")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		err := f.Fetch(context.Background(), src, dst)
		if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), "exceed") {
			t.Fatalf("MaxFiles %d, MaxBytes %d: %v, want EINVALID: exceed", f.MaxFiles, f.MaxBytes, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 1 || ents[0].Name() != "out" {
			t.Fatalf("after a refused fetch the parent holds %v, want only the old out", ents)
		}
	}
	if err := (Fetcher{Sources: []string{src}, MaxFiles: 3, MaxBytes: 3}).Fetch(context.Background(), src, filepath.Join(t.TempDir(), "out")); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
}

// TestFetchModes: copies never widen a mode: a 0600 file stays 0600, a
// 0700 directory 0700; execute bits and group or other write go.
func TestFetchModes(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]os.FileMode{"secret": 0o600, "run.sh": 0o755, "open": 0o666, "private/x": 0o644})
	if err := os.Chmod(filepath.Join(src, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if err := (Fetcher{Sources: []string{src}}).Fetch(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"secret": 0o600, "run.sh": 0o644, "open": 0o644, "private": 0o700 | os.ModeDir} {
		st, err := os.Stat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode() & (os.ModePerm | os.ModeDir); got&^want != 0 || (name == "secret" && got != want) {
			t.Errorf("%s: mode %v, want %v or narrower", name, got, want)
		}
	}
}
