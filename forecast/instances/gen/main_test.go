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

// TestParserSubset covers the literal forms the tables use.
func TestParserSubset(t *testing.T) {
	src := "exports.A = exports.B = void 0;\nexports.B = {\n    a1: { medium: [1, 2, 1.5], '2xlarge': [8, 16] },\n    [core_1.X.Y]: 0.64, // note\n    'E2as v4': [core_1.X.Z],\n};\n"
	v, err := find(src, "exports.B")
	if err != nil {
		t.Fatal(err)
	}
	o := v.(object)
	if got, want := len(o), 3; got != want {
		t.Fatalf("keys=%d, want %d", got, want)
	}
	fam := o[0].val.(object)
	if got, want := fam[1].key, "2xlarge"; got != want {
		t.Fatalf("key=%q, want %q", got, want)
	}
	if got, want := o[1].key, "\x00core_1.X.Y"; got != want {
		t.Fatalf("key=%q, want %q", got, want)
	}
	if got := o[2].val.([]any)[0]; got != ref("core_1.X.Z") {
		t.Fatalf("value=%v, want a reference", got)
	}
}
