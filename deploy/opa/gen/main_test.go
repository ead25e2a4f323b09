package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the region files instead of comparing them")

// TestRegionFilesUpToDate fails when deploy/opa/carbongate/regions differs
// from what the region table gives; -update rewrites the files.
func TestRegionFilesUpToDate(t *testing.T) {
	dir := filepath.Join("..", "carbongate", "regions")
	if *update {
		if err := run(dir); err != nil {
			t.Fatal(err)
		}
	}
	files, err := render()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v: run `go run ./deploy/opa/gen` from the repository root", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go run ./deploy/opa/gen` from the repository root (or go test ./deploy/opa/gen -update)", name)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := files[filepath.Join(e.Name(), "data.json")]; !ok {
			t.Errorf("%s/%s: no provider of that name; remove it", dir, e.Name())
		}
	}
}
