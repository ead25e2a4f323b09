package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent, and the
// build events go test -json has printed since Go 1.24).
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string // build-output and build-fail events
	FailedBuild string // set on a package's fail when its build failed
}

// pkgResult is what one package reported.
type pkgResult struct {
	action  string // pass, fail or skip (skip: no test files)
	elapsed float64
	build   bool // failed to build
}

// report follows the events of every step: it prints each package's result
// line and each failed test's output, keeps the counts and writes the raw
// events to raw.
type report struct {
	out, raw   io.Writer
	pkgs       map[string]pkgResult
	outputs    map[string][]string // package/test -> its output so far
	builds     map[string][]string // import path -> build output
	testFailed map[string]bool     // packages with a failed test
	passed     int
	failed     int
	skipped    int
}

func newReport(out, raw io.Writer) *report {
	return &report{out: out, raw: raw, pkgs: map[string]pkgResult{},
		outputs: map[string][]string{}, builds: map[string][]string{}, testFailed: map[string]bool{}}
}

// line takes one line of go test -json's standard output; a line that is
// not an event is printed as it is.
func (r *report) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		fmt.Fprintf(r.out, "%s\n", b)
		return
	}
	fmt.Fprintf(r.raw, "%s\n", b)
	switch {
	case e.Action == "build-output":
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
	case e.Action == "build-fail":
		fmt.Fprintf(r.out, "%s", strings.Join(r.builds[e.ImportPath], ""))
	case e.Test != "":
		r.test(e)
	default:
		r.pkg(e)
	}
}

func (r *report) test(e event) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		r.outputs[key] = append(r.outputs[key], e.Output)
	case "pass":
		r.passed++
		delete(r.outputs, key)
	case "skip":
		r.skipped++
		delete(r.outputs, key)
	case "fail":
		r.failed++
		r.testFailed[e.Package] = true
		fmt.Fprintf(r.out, "%s", strings.Join(r.outputs[key], ""))
		delete(r.outputs, key)
	}
}

func (r *report) pkg(e event) {
	switch e.Action {
	case "output":
		// The package's own lines: "ok", "FAIL", "? … [no test files]",
		// a panic or a timeout outside any test, coverage.
		if !strings.HasPrefix(e.Output, "PASS") && e.Output != "FAIL\n" {
			fmt.Fprintf(r.out, "%s", e.Output)
		}
	case "pass", "fail", "skip":
		r.pkgs[e.Package] = pkgResult{action: e.Action, elapsed: e.Elapsed, build: e.FailedBuild != ""}
	}
}

// summary prints the package and test counts against the packages expected,
// names every failed and missing package, and reports whether all passed.
// Its last line is "tests: N passed, N failed[, N skipped]", where failed
// also counts each failed or missing package that no failed test accounts
// for (a build failure, a crash outside a test, a binary that never ran).
func (r *report) summary(w io.Writer, expected []string, tags string) bool {
	var ok, none, bad, missing []string
	for _, p := range expected {
		res, seen := r.pkgs[p]
		switch {
		case !seen:
			missing = append(missing, p)
		case res.action == "pass":
			ok = append(ok, p)
		case res.action == "skip":
			none = append(none, p)
		default:
			bad = append(bad, p)
		}
	}
	for p := range r.pkgs {
		if !slices.Contains(expected, p) {
			fmt.Fprintf(w, "gotest: %s reported a result but go list did not name it\n", p)
		}
	}
	fmt.Fprintln(w)
	for _, p := range bad {
		why := "failed"
		if r.pkgs[p].build {
			why = "failed to build"
		}
		fmt.Fprintf(w, "FAILED  %s (%s)\n", p, why)
	}
	for _, p := range missing {
		fmt.Fprintf(w, "MISSING %s (listed by go list -tags %q, no result: its tests never ran)\n", p, tags)
	}
	fmt.Fprintf(w, "packages: %d listed by go list -tags %q: %d ok, %d without test files, %d failed, %d missing\n",
		len(expected), tags, len(ok), len(none), len(bad), len(missing))
	failed := r.failed
	if extra := len(bad) + len(missing) - r.failedPackagesWithTests(bad); extra > 0 {
		failed += extra
	}
	line := fmt.Sprintf("tests: %d passed, %d failed", r.passed, failed)
	if r.skipped > 0 {
		line += fmt.Sprintf(", %d skipped", r.skipped)
	}
	fmt.Fprintln(w, line)
	return len(bad) == 0 && len(missing) == 0 && failed == 0
}

// failedPackagesWithTests counts the failed packages in which at least one
// test failed (their failure is already in the test count).
func (r *report) failedPackagesWithTests(bad []string) int {
	n := 0
	for _, p := range bad {
		if r.testFailed[p] {
			n++
		}
	}
	return n
}
