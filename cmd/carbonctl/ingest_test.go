package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/test/testsupport"
)

const emHeader = dataset.HeaderB + "\n"

// emRows returns Electricity Maps export rows for zone DE from hour from
// (inclusive) to to (exclusive) of 2021-01-01, direct = 300+h.
func emRows(from, to int, direct func(h int) float64) string {
	var b strings.Builder
	b.WriteString(emHeader)
	for h := from; h < to; h++ {
		d := direct(h)
		b.WriteString(strings.Join([]string{
			fmt.Sprintf("2021-01-%02d %02d:00:00", 1+h/24, h%24), "Germany", "Germany", "DE",
			strconv.FormatFloat(d, 'f', -1, 64), strconv.FormatFloat(d+50, 'f', -1, 64), "40", "35", "entsoe.eu", "false", "",
		}, ","))
		b.WriteByte('\n')
	}
	return b.String()
}

func linear(h int) float64 { return 300 + float64(h) }

const layoutA = "datetime_utc,ci_direct,ci_lifecycle,wind_mwh,coal_mwh\n" +
	"2020-01-01T00:00:00Z,100,150,10,20\n" +
	"2020-01-01T01:00:00+01:00,100,150,10,20\n" + // same hour, other offset: identical duplicate
	"2020-01-01T01:00:00Z,,151,11,21\n" + // gap filled
	"2020-01-01T02:00:00Z,102,152,12,22\n"

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func ingest(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = runIngest(context.Background(), args, &o, &e)
	return o.String(), e.String(), err
}

// listFiles returns the files under dir, slash-separated and relative.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func TestIngestBothLayouts(t *testing.T) {
	t.Parallel()
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "data")
	em := testsupport.WriteFile(t, in, "electricitymaps_DE_2021.csv", []byte(emRows(0, 48, linear)))
	se := testsupport.WriteFile(t, in, "SE.csv.gz", gzipped(t, layoutA))

	stdout, stderr, err := ingest(t, "--out", out, em, se)
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		em + ": zone DE, 48 hours, 2021-01-01T00:00:00Z..2021-01-02T23:00:00Z, 0 warnings -> " + filepath.Join(out, "DE", "electricitymaps_DE_2021.csv"),
		se + ": zone SE, 3 hours, 2020-01-01T00:00:00Z..2020-01-01T02:00:00Z, 4 warnings -> " + filepath.Join(out, "SE", "SE.csv"),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{
		se + ":3: warning: time 2020-01-01T01:00:00+01:00 is not in UTC",
		se + ":3: warning: duplicate of " + se + ":2",
		se + ":4: warning: ci_direct: empty value",
		se + ":4: warning: ci_direct missing for 1 hour(s)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	tables, issues, err := dataset.LoadDir(out)
	if err != nil || len(issues) != 0 {
		t.Fatalf("LoadDir(out): %v %v", err, issues)
	}
	if got, want := tables["SE"].Direct, []float64{100, 101, 102}; !slices.Equal(got, want) {
		t.Errorf("SE direct=%v, want %v", got, want)
	}
	if got, want := tables["SE"].SourceNames(), []string{"coal", "wind"}; !slices.Equal(got, want) {
		t.Errorf("SE sources=%v, want %v", got, want)
	}
	if got, want := tables["DE"].Len(), 48; got != want {
		t.Errorf("DE hours=%d, want %d", got, want)
	}
	if got, want := listFiles(t, out), []string{"DE/electricitymaps_DE_2021.csv", "SE/SE.csv"}; !slices.Equal(got, want) {
		t.Errorf("files=%v, want %v", got, want)
	}

	// Ingesting the same file again is idempotent.
	if _, stderr, err := ingest(t, "--out", out, em); err != nil {
		t.Fatalf("re-ingest: %v\n%s", err, stderr)
	}
	if got, want := len(listFiles(t, out)), 2; got != want {
		t.Errorf("after re-ingest %d files, want %d", got, want)
	}
}

func TestIngestSecondPeriod(t *testing.T) {
	t.Parallel()
	in, out := t.TempDir(), t.TempDir()
	p1 := testsupport.WriteFile(t, in, "2021-01-01.csv", []byte(emRows(0, 24, linear)))
	p2 := testsupport.WriteFile(t, in, "2021-01-02.csv", []byte(emRows(24, 48, linear)))
	for _, p := range []string{p1, p2} {
		if _, stderr, err := ingest(t, "--out", out, p); err != nil {
			t.Fatalf("%s: %v\n%s", p, err, stderr)
		}
	}
	tables, _, err := dataset.LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tables["DE"].Len(), 48; got != want {
		t.Fatalf("DE hours=%d, want %d", got, want)
	}

	// A third period that disagrees with the second is refused.
	p3 := testsupport.WriteFile(t, in, "2021-01-03.csv", []byte(emRows(40, 60, func(h int) float64 { return 900 })))
	stdout, stderr, err := ingest(t, "--out", out, p3)
	if err == nil {
		t.Fatalf("conflicting period accepted:\n%s", stdout)
	}
	if want := p3 + ":2: error: conflicts with " + filepath.Join(out, "DE", "2021-01-02.csv") + ":18"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if got, want := len(listFiles(t, out)), 2; got != want {
		t.Errorf("%d files after a refused ingest, want %d: %v", got, want, listFiles(t, out))
	}
}

func TestIngestRefusesErrors(t *testing.T) {
	t.Parallel()
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "data")
	good := testsupport.WriteFile(t, in, "DE.csv", []byte(emRows(0, 24, linear)))
	bad := testsupport.WriteFile(t, in, "PL.csv", []byte("datetime_utc,ci_direct,ci_lifecycle\n"+
		"2021-01-01T00:00:00Z,1,2\n2021-01-01T00:30:00Z,1,2\n2021-01-01T10:00:00Z,1,2\n"))
	stdout, stderr, err := ingest(t, "--out", out, good, bad)
	if err == nil {
		t.Fatal("ingest accepted a file with errors")
	}
	if isUsage(err) {
		t.Errorf("err %v is a usage error; want a failure", err)
	}
	for _, want := range []string{
		bad + ":3: error: time 2021-01-01T00:30:00Z is not on the hour",
		bad + ":4: error: no rows for 9 hour(s)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, bad+": rejected (2 errors, 0 warnings)") {
		t.Errorf("stdout lacks the rejection:\n%s", stdout)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("out dir exists after a refused ingest: %v %v", err, listFiles(t, out))
	}
}

func TestIngestZoneFlag(t *testing.T) {
	t.Parallel()
	in, out := t.TempDir(), t.TempDir()
	f := testsupport.WriteFile(t, in, "2020-q1.csv", []byte(layoutA))
	if _, stderr, err := ingest(t, "--out", out, f); err == nil || !strings.Contains(stderr, f+": error: cannot tell the zone") {
		t.Fatalf("err=%v, stderr=%q; want a zone error", err, stderr)
	}
	if _, stderr, err := ingest(t, f, "--zone", "nl", "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got, want := listFiles(t, out), []string{"NL/2020-q1.csv"}; !slices.Equal(got, want) {
		t.Fatalf("files=%v, want %v", got, want)
	}
	// --zone must agree with an Electricity Maps file.
	em := testsupport.WriteFile(t, in, "em.csv", []byte(emRows(0, 2, linear)))
	if _, _, err := ingest(t, "--out", out, "--zone", "NL", em); err == nil {
		t.Fatal("zone conflict accepted")
	}
}

func TestIngestCheckOnly(t *testing.T) {
	t.Parallel()
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "data")
	f := testsupport.WriteFile(t, in, "DE.csv", []byte(emRows(0, 3, linear)))
	stdout, _, err := ingest(t, "--check", "--out", out, f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "nothing written") {
		t.Errorf("stdout=%q", stdout)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--check wrote %v", listFiles(t, out))
	}
}

func TestIngestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"no out", []string{"x.csv"}},
		{"no files", []string{"--out", "d"}},
		{"bad zone", []string{"--out", "d", "--zone", "a b", "x.csv"}},
		{"negative gap", []string{"--out", "d", "--max-gap", "-1", "x.csv"}},
		{"unknown flag", []string{"--nope"}},
		{"store scheme", []string{"--store", "mysql://u@h/db", "x.csv"}},
		{"store without scheme", []string{"--store", "localhost:5432", "x.csv"}},
		{"migrate without store", []string{"--out", "d", "--migrate", "x.csv"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ingest(t, tc.args...)
			if !isUsage(err) {
				t.Fatalf("err=%v, want a usage error", err)
			}
		})
	}
	// Through Main: exit code 2 for usage, 1 for a missing file.
	var o, e bytes.Buffer
	if got, want := Main(context.Background(), []string{"ingest"}, &o, &e), 2; got != want {
		t.Errorf("exit=%d, want %d", got, want)
	}
	if got, want := Main(context.Background(), []string{"ingest", "--out", t.TempDir(), filepath.Join(t.TempDir(), "missing.csv")}, &o, &e), 1; got != want {
		t.Errorf("exit=%d, want %d", got, want)
	}
}

// TestIngestStoreURL: a store URL the driver cannot parse is a usage error
// naming --store, found without contacting a database and before anything
// is written.
func TestIngestStoreURL(t *testing.T) {
	t.Parallel()
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "data")
	f := testsupport.WriteFile(t, in, "DE.csv", []byte(emRows(0, 3, linear)))
	for _, uri := range []string{"postgres://u@127.0.0.1:notaport/db", "crate://u@127.0.0.1:99999999/doc"} {
		_, _, err := ingest(t, "--store", uri, f)
		if !isUsage(err) || !strings.Contains(err.Error(), "--store") {
			t.Fatalf("--store %s: err=%v, want a usage error naming --store", uri, err)
		}
	}
	// A store that cannot be reached is a failure (exit 1), not a usage error.
	var o, e bytes.Buffer
	if got, want := Main(context.Background(), []string{"ingest", "--out", out, "--store", "postgres://u@127.0.0.1:1/db?connect_timeout=2", f}, &o, &e), 1; got != want {
		t.Fatalf("exit=%d, want %d\n%s", got, want, e.String())
	}
	if !strings.Contains(e.String(), "--store") {
		t.Fatalf("stderr %q does not name --store", e.String())
	}
}

func TestOutputName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"DE.csv":                              "DE.csv",
		"dir/DE.CSV.GZ":                       "DE.csv",
		"export.txt":                          "export.txt.csv",
		".hidden.csv":                         "hidden.csv",
		"_x.csv.gz":                           "x.csv",
		"2021.gz":                             "2021.csv",
		filepath.Join("a", "b"):               "b.csv",
		forecast.Zone("SE").String() + ".csv": "SE.csv",
	} {
		if got := outputName(in); got != want {
			t.Errorf("outputName(%q)=%q, want %q", in, got, want)
		}
	}
}
