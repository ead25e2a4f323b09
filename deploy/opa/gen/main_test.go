package main

import (
	"bytes"
	"flag"
	"os"
	"path"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the derived files instead of comparing them")

// TestDerivedFilesUpToDate fails when regions/ or candidates/ below
// deploy/opa/carbongate differ from what the region table and the
// hand-edited latency and residency files give; -update rewrites them.
func TestDerivedFilesUpToDate(t *testing.T) {
	dir := filepath.Join("..", "carbongate")
	if *update {
		if err := run(dir); err != nil {
			t.Fatal(err)
		}
	}
	files, err := render(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatalf("%v: run `go run ./deploy/opa/gen` from the repository root", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go run ./deploy/opa/gen` from the repository root (or go test ./deploy/opa/gen -update)", name)
		}
	}
	for _, sub := range []string{"regions", "candidates", "instances"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := files[path.Join(sub, e.Name(), "data.json")]; !ok {
				t.Errorf("%s/%s: no provider of that name; remove it", sub, e.Name())
			}
		}
	}
}
