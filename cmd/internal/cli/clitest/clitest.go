// Package clitest runs a command's main in a child process for tests of
// its command-line conventions (help on stdout, exit codes): the test
// binary starts itself, and TestMain calls RunMain first.
package clitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
)

// childEnv marks a test binary started by Run: it runs main, not the tests.
const childEnv = "CLITEST_RUN_MAIN"

// RunMain runs main and exits when the process was started by Run; it
// returns at once otherwise. Call it first in TestMain.
func RunMain(main func()) {
	if os.Getenv(childEnv) != "1" {
		return
	}
	main()
	os.Exit(0)
}

// Run starts the test binary as the command with args and the extra
// environment env (NAME=value), and returns its exit code and output.
func Run(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%v: %v", args, err)
	}
	return code, o.String(), e.String()
}

// Conventions checks a daemon's command line in a child process: -h and
// --help print the usage on stdout and exit 0, listing every flag with its
// CARBONGATE_* variable, none of which is one the test harness sets; an
// unknown flag exits 2 naming it on stderr; a variable with a bad value
// (badEnv, NAME=value) exits 2 naming the variable.
func Conventions(t *testing.T, name, badEnv string) {
	t.Helper()
	for _, h := range []string{"-h", "--help"} {
		code, out, errOut := Run(t, nil, h)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: "+name) {
			t.Fatalf("%s %s: exit %d\nstdout %s\nstderr %s", name, h, code, out, errOut)
		}
		flags, envs := 0, 0
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "--") {
				flags++
			}
			if strings.HasPrefix(line, "old name of --") {
				flags-- // no variable of its own
			}
			if env, ok := strings.CutPrefix(line, "env "); ok {
				envs++
				if cli.Reserved(env) {
					t.Errorf("%s: a flag maps onto %s, which the test harness sets", name, env)
				}
			}
		}
		if flags < 10 || envs != flags {
			t.Errorf("%s %s: %d flags, %d variables in the usage:\n%s", name, h, flags, envs, out)
		}
	}
	code, out, errOut := Run(t, nil, "--no-such-flag")
	if code != 2 || out != "" || errOut != name+": unknown flag --no-such-flag\n" {
		t.Errorf("%s --no-such-flag: exit %d\nstdout %s\nstderr %s", name, code, out, errOut)
	}
	env, _, _ := strings.Cut(badEnv, "=")
	code, out, errOut = Run(t, []string{badEnv}, "--no-such-flag-either")
	if code != 2 || out != "" || !strings.Contains(errOut, "unknown flag") {
		t.Errorf("%s: an unknown flag wins over %s: exit %d\nstdout %s\nstderr %s", name, env, code, out, errOut)
	}
	code, out, errOut = Run(t, []string{badEnv})
	if code != 2 || out != "" || !strings.HasPrefix(errOut, name+": $"+env+": invalid value") {
		t.Errorf("%s with %s: exit %d\nstdout %s\nstderr %s", name, badEnv, code, out, errOut)
	}
}
