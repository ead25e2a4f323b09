// Command gotest is what `make test` runs the Go tests with: every package
// that `go list -tags TAGS ./...` names, in the module and in the modules
// nested in it, each with a result, or the run fails.
//
// It lists the packages with the same build tags it tests them with (a
// package whose files all carry `//go:build interop` is absent from a plain
// `go list ./...`, and a list made without the tag once kept eight suites out
// of every run), runs `go test -json` over them (the packages given by -alone
// afterwards, one at a time, with nothing beside them), prints each
// package's result line and the output of each failed test as it comes, and
// ends with a summary whose last line is
//
//	tests: N passed, N failed[, N skipped]
//
// A listed package that reports no result (its test binary killed, a build
// step that never ran) is counted as a failure and named, and so is a
// package that fails to build. The exit status is non-zero when any test or
// package failed or is missing, or when a go command failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	var cfg config
	fs := flag.NewFlagSet("gotest", flag.ExitOnError)
	fs.StringVar(&cfg.Go, "go", "go", "the go command")
	fs.StringVar(&cfg.Tags, "tags", "", "build tags for go list and go test")
	fs.StringVar(&cfg.Timeout, "timeout", "25m", "go test -timeout for each go test run")
	alone := fs.String("alone", "", "comma-separated packages (import paths) run after the rest, one at a time")
	nested := fs.String("nested", "", "comma-separated directories of nested modules, tested from their own directory")
	fs.StringVar(&cfg.JSONOut, "json-out", "", "also write every go test -json event to this file")
	_ = fs.Parse(os.Args[1:])
	cfg.Alone = splitList(*alone)
	cfg.Nested = splitList(*nested)
	cfg.Dir = "."

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// config is one run: the module in Dir, its nested modules and how to test them.
type config struct {
	Go      string
	Dir     string   // the main module's directory
	Tags    string   // build tags, for listing and testing alike
	Timeout string   // go test -timeout
	Alone   []string // import paths run last, one go test each
	Nested  []string // nested module directories, relative to Dir
	JSONOut string   // a file for the raw events ("" for none)
}

// run lists, tests and summarises; ok is false when anything failed or is
// missing. An error is returned only when the run could not be made at all
// (a package list that go could not produce).
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) (ok bool, err error) {
	steps, expected, err := plan(ctx, cfg)
	if err != nil {
		return false, err
	}
	var raw io.Writer = io.Discard
	if cfg.JSONOut != "" {
		f, err := os.Create(cfg.JSONOut)
		if err != nil {
			return false, err
		}
		defer f.Close()
		raw = f
	}
	rep := newReport(stdout, raw)
	cmdsOK := true
	for _, s := range steps {
		if ctx.Err() != nil {
			break
		}
		if err := s.run(ctx, cfg, rep, stderr); err != nil {
			fmt.Fprintf(stderr, "gotest: %s: %v\n", s, err)
			cmdsOK = false
		}
	}
	return rep.summary(stdout, expected, cfg.Tags) && cmdsOK && ctx.Err() == nil, nil
}
