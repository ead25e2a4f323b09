package services

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GoBuild builds carbongate's commands (e.g. "carbongate", "carbonserve")
// into a fresh temp dir and returns it. The Go build cache keeps reruns
// fast.
func GoBuild(tb testing.TB, cmds ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	root := RepoRoot(tb)
	if err := Build(root, dir, cmds...); err != nil {
		tb.Fatalf("services: %v", err)
	}
	return dir
}

// Build builds carbongate's commands into dir from the module at root
// (see FindRepoRoot). It serves TestMain, which has no testing.TB, to
// build once per test binary; tests use GoBuild.
func Build(root, dir string, cmds ...string) error {
	pkgs := make([]string, len(cmds))
	for i, c := range cmds {
		pkgs[i] = "./cmd/" + c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out.String())
	}
	return nil
}

// Binary describes one of our own programs to start.
type Binary struct {
	Name string   // for logs
	Path string   // executable
	Args []string // built again for each attempt by ArgsFor when set
	// ArgsFor, when set, builds the arguments from fresh free ports (it is
	// called again if an attempt dies of a port collision).
	ArgsFor func() []string
	Env     []string // added to the environment
	// Ready reports readiness; see HTTPReady.
	Ready   func(ctx context.Context) error
	Timeout time.Duration // default DefaultStartTimeout
}

// StartBinary starts b, waits until b.Ready passes and kills it at cleanup
// (and with the test binary). The process's log is shown when the test
// fails.
func StartBinary(tb testing.TB, b Binary) *Proc {
	tb.Helper()
	return start(tb, b.Timeout, func() spec {
		args := b.Args
		if b.ArgsFor != nil {
			args = b.ArgsFor()
		}
		return spec{name: b.Name, dir: filepath.Dir(b.Path), path: b.Path, args: args, env: b.Env, ready: b.Ready}
	})
}

// HTTPReady returns a readiness check that wants 200 from url.
func HTTPReady(url string) func(context.Context) error {
	return func(ctx context.Context) error { return wantStatus(ctx, url, http.StatusOK) }
}

// OIPReady returns a readiness check for an OIP server: REST live, the
// gRPC port open (when grpcAddr is set) and model ready.
func OIPReady(restURL, grpcAddr, model string) func(context.Context) error {
	return func(ctx context.Context) error {
		if grpcAddr == "" {
			return wantStatus(ctx, fmt.Sprintf("%s/v2/models/%s/ready", restURL, model), http.StatusOK)
		}
		return readyCheck(restURL, grpcAddr, model, true)(ctx)
	}
}

// Run runs the program at path with args to completion (at most 5
// minutes) and fails the test with its output when it fails.
func Run(tb testing.TB, path string, args ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", filepath.Base(path), strings.Join(args, " "), err, out)
	}
}

// StartGateway starts the carbongate at path on a free loopback port with
// --drain-delay 0s, --access-log=false and args, and returns its base URL
// once /readyz answers 200.
func StartGateway(tb testing.TB, path string, args ...string) string {
	tb.Helper()
	return StartGatewayEnv(tb, path, nil, args...)
}

// StartGatewayEnv is StartGateway with env added to the environment.
func StartGatewayEnv(tb testing.TB, path string, env []string, args ...string) string {
	tb.Helper()
	var base string
	StartBinary(tb, Binary{
		Name: "carbongate", Path: path, Env: env,
		ArgsFor: func() []string {
			p := FreePort(tb)
			base = fmt.Sprintf("http://127.0.0.1:%d", p)
			return append([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", p), "--drain-delay", "0s", "--access-log=false"}, args...)
		},
		Ready: func(ctx context.Context) error { return HTTPReady(base + "/readyz")(ctx) },
	})
	return base
}
