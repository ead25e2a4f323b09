package services

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CheckOIPServer runs test/python/check_oip_server.py — KServe's own Python
// clients (InferenceRESTClient, InferenceGRPCClient) against an OIP server —
// and returns its report (one line per check, "ok" or "FAIL") and exit code
// (0: every check passed, 1: some failed). restURL or grpcAddr may be "" to
// skip that transport; args are passed on (e.g. "--expect-seasonal-naive",
// "--horizon", "24"). It fails the test only when the checker cannot run.
func CheckOIPServer(tb testing.TB, restURL, grpcAddr, model string, args ...string) (report string, exitCode int) {
	tb.Helper()
	venv := Venv(tb, KServeEnv)
	argv := []string{filepath.Join(PythonDir(tb), "check_oip_server.py"), "--model", model}
	if restURL != "" {
		argv = append(argv, "--rest-url", restURL)
	}
	if grpcAddr != "" {
		argv = append(argv, "--grpc-addr", grpcAddr)
	}
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), argv...)
	cmd.Env = append(cmd.Environ(), pythonEnv(tb)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return stdout.String(), 1
	}
	tb.Fatalf("services: check_oip_server.py: %v\n%s\n%s", err, stdout.String(), stderr.String())
	return "", 0
}
