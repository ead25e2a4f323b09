package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module writes a module of its own into a temp dir: files maps a path
// relative to the module to its content.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.24\n"
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const passing = "package %s\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n"

func pkgTest(build, name, body string) string {
	src := strings.Replace(passing, "%s", name, 1)
	if body != "" {
		src = "package " + name + "\n\nimport \"testing\"\n\n" + body
	}
	if build != "" {
		src = "//go:build " + build + "\n\n" + src
	}
	return src
}

func runIn(t *testing.T, cfg config) (bool, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cfg.Go = "go"
	if cfg.Timeout == "" {
		cfg.Timeout = "2m"
	}
	ok, err := run(context.Background(), cfg, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	return ok, out.String() + errOut.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A package whose only test file carries the build tag is tested, and
// shows in the counts: the regression that kept eight suites out of make
// test for two days.
func TestInteropOnlyPackageRuns(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"a/a_test.go":       pkgTest("", "a", ""),
		"b/b_test.go":       pkgTest("interop", "b", ""),
		"c/c.go":            "package c\n",
		"n/go.mod":          "module example.com/n\n\ngo 1.24\n",
		"n/n_test.go":       pkgTest("interop", "n", ""),
		"alone/one_test.go": pkgTest("", "alone", ""),
	})
	// The positive control: listed without the tag, b is not there at all.
	plain, err := list(context.Background(), config{Go: "go"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(plain, " "), "example.com/m/b") {
		t.Fatalf("go list without the tag names b (%v): the control shows nothing", plain)
	}

	ok, out := runIn(t, config{Dir: dir, Tags: "interop", Nested: []string{"n"}, Alone: []string{"example.com/m/alone"}})
	if !ok {
		t.Fatalf("run failed:\n%s", out)
	}
	for _, want := range []string{
		"ok  \texample.com/m/b",
		"ok  \texample.com/n",
		"ok  \texample.com/m/alone",
		"packages: 5 listed by go list -tags \"interop\": 4 ok, 1 without test files, 0 failed, 0 missing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got, want := lastLine(out), "tests: 4 passed, 0 failed"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

// A package that does not build under the tag fails the run and is named;
// it never vanishes from it. So does a failing test.
func TestBuildFailureAndFailingTestFail(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{
		"a/a_test.go": pkgTest("", "a", ""),
		"d/d_test.go": pkgTest("interop", "d", "func TestX(t *testing.T) { var x int = \"s\"; _ = x }\n"),
		"e/e_test.go": pkgTest("", "e", "func TestBad(t *testing.T) { t.Log(\"the reason\"); t.Fail() }\n"),
	})
	ok, out := runIn(t, config{Dir: dir, Tags: "interop"})
	if ok {
		t.Fatalf("run passed with a build failure and a failing test:\n%s", out)
	}
	for _, want := range []string{
		"FAILED  example.com/m/d (failed to build)",
		"FAILED  example.com/m/e (failed)",
		"the reason",
		"1 ok, 0 without test files, 2 failed, 0 missing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// One failing test, plus the package that failed without one (d).
	if got, want := lastLine(out), "tests: 1 passed, 2 failed"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

// A listed package without any result (here: its go test never ran because
// the run was cut short) is counted as missing and fails the run.
func TestMissingPackageFails(t *testing.T) {
	t.Parallel()
	rep := newReport(&bytes.Buffer{}, &bytes.Buffer{})
	rep.line([]byte(`{"Action":"pass","Package":"example.com/m/a","Test":"TestOK"}`))
	rep.line([]byte(`{"Action":"pass","Package":"example.com/m/a","Elapsed":0.1}`))
	var out bytes.Buffer
	if rep.summary(&out, []string{"example.com/m/a", "example.com/m/b"}, "interop") {
		t.Fatalf("summary passed with a missing package:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "MISSING example.com/m/b") {
		t.Errorf("missing package not named:\n%s", out.String())
	}
	if got, want := lastLine(out.String()), "tests: 1 passed, 1 failed"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

func TestAloneMustBeListed(t *testing.T) {
	t.Parallel()
	dir := module(t, map[string]string{"a/a_test.go": pkgTest("", "a", "")})
	_, err := run(context.Background(), config{Go: "go", Dir: dir, Timeout: "1m", Alone: []string{"example.com/m/nope"}}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "example.com/m/nope") {
		t.Fatalf("err = %v, want one naming the unlisted package", err)
	}
}

// make test runs the Go tests through this runner, with the interop tag,
// over every nested module that holds tests (every go.mod below the root
// but the tools modules under test/setup/, which hold no tests and are
// built by the setup scripts).
func TestMakeTestRunsEveryModule(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "test")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n test: %v", err)
	}
	var runner string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "./test/gotest") {
			runner = l
		}
		if strings.Contains(l, "go test") && strings.Contains(l, "go list") {
			t.Errorf("make test feeds go list to go test by hand: %s", l)
		}
	}
	if !strings.Contains(runner, "-tags interop") {
		t.Fatalf("make test does not run ./test/gotest -tags interop; its recipe:\n%s", out)
	}
	var want []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || rel == filepath.Join("test", "setup")) {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" && rel != "go.mod" {
			want = append(want, filepath.Dir(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(runner)
	i := slices.Index(f, "-nested")
	if i < 0 || i+1 >= len(f) {
		t.Fatalf("make test's runner has no -nested list: %s", runner)
	}
	got := splitList(f[i+1])
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("make test's nested modules %v, want every module with tests %v", got, want)
	}
}
