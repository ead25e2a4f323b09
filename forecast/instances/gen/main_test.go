package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

var update = flag.Bool("update", false, "rewrite the data files")

// TestDataFilesUpToDate regenerates the data files from the pinned tarballs
// and compares them with the committed ones. make test fetches the tarballs
// (test/setup/ccf.sh) and passes their directory in CARBONGATE_CCF; without
// it the test runs that script itself, and fails if it cannot.
func TestDataFilesUpToDate(t *testing.T) {
	dir := os.Getenv("CARBONGATE_CCF")
	if dir == "" {
		dir = services.Setup(t, "ccf.sh")
	}
	files, err := render(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join("..", "data")
	for name, want := range files {
		if *update {
			if err := os.WriteFile(filepath.Join(data, name), want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(filepath.Join(data, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate (or go test ./forecast/instances/gen -update)", name)
		}
	}
}
