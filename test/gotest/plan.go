package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// step is one go test invocation: packages of one module, from its directory.
type step struct {
	dir  string   // the module's directory
	pkgs []string // import paths
}

func (s step) String() string {
	if len(s.pkgs) == 1 {
		return "go test " + s.pkgs[0]
	}
	return fmt.Sprintf("go test of %d packages in %s", len(s.pkgs), s.dir)
}

// plan lists every package of the main module and of each nested module
// with the run's tags and splits them into go test steps: the main module's
// packages but the lone ones, each nested module, then each lone package.
// expected is every listed package.
func plan(ctx context.Context, cfg config) (steps []step, expected []string, err error) {
	root, err := list(ctx, cfg, cfg.Dir)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range cfg.Alone {
		if !slices.Contains(root, a) {
			return nil, nil, fmt.Errorf("-alone %s: not a package of %s with tags %q", a, cfg.Dir, cfg.Tags)
		}
	}
	rest := slices.DeleteFunc(slices.Clone(root), func(p string) bool { return slices.Contains(cfg.Alone, p) })
	if len(rest) > 0 {
		steps = append(steps, step{dir: cfg.Dir, pkgs: rest})
	}
	expected = append(expected, root...)
	for _, n := range cfg.Nested {
		dir := filepath.Join(cfg.Dir, n)
		pkgs, err := list(ctx, cfg, dir)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, step{dir: dir, pkgs: pkgs})
		expected = append(expected, pkgs...)
	}
	for _, a := range cfg.Alone {
		steps = append(steps, step{dir: cfg.Dir, pkgs: []string{a}})
	}
	return steps, expected, nil
}

// list is `go list -e -tags TAGS ./...` in dir: with -e a package that does
// not build is still listed, so that its failure shows in the run instead
// of the package vanishing from it.
func list(ctx context.Context, cfg config, dir string) ([]string, error) {
	cmd := exec.CommandContext(ctx, cfg.Go, "list", "-e", "-tags", cfg.Tags, "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -tags %q ./... in %s: %v: %s", cfg.Tags, dir, err, strings.TrimSpace(stderr.String()))
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list -tags %q ./... in %s: no packages", cfg.Tags, dir)
	}
	return pkgs, nil
}

// run is the step's go test -json, its events fed to rep as they come and
// anything else it prints (go's own messages) passed to stderr.
func (s step) run(ctx context.Context, cfg config, rep *report, stderr io.Writer) error {
	args := []string{"test", "-json", "-count=1", "-tags", cfg.Tags, "-timeout", cfg.Timeout}
	cmd := exec.CommandContext(ctx, cfg.Go, append(args, s.pkgs...)...)
	cmd.Dir = s.dir
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		rep.line(sc.Bytes())
	}
	scanErr := sc.Err()
	if err := cmd.Wait(); err != nil {
		// go test exits 1 when a test failed; the report counts those.
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && scanErr == nil {
			return nil
		}
		return err
	}
	return scanErr
}
