package services

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is the test binary run again as one of its own tests, for a test
// of what a killed run leaves behind.
type Child struct {
	cmd  *exec.Cmd
	done chan error
}

// StartChild runs the test binary again with only test (a name) and the
// variable env set to the path of a file the child writes once its set-up
// is up, and returns once that file exists. It fails tb, with the tail of
// the child's log, when the child ends first or after timeout.
func StartChild(tb testing.TB, test, env string, timeout time.Duration) *Child {
	tb.Helper()
	marker := filepath.Join(tb.TempDir(), "up")
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.v", "-test.timeout", "10m")
	cmd.Env = append(os.Environ(), env+"="+marker)
	log, err := os.Create(filepath.Join(tb.TempDir(), "child.log"))
	if err != nil {
		tb.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &Child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	tb.Cleanup(c.Kill)
	deadline := time.After(timeout)
	for {
		if _, err := os.Stat(marker); err == nil {
			return c
		}
		select {
		case err := <-c.done:
			c.done <- err
			b, _ := os.ReadFile(log.Name())
			tb.Fatalf("services: the child %s ended (%v) before it was up:\n%s", test, err, TailLines(string(b), 60))
		case <-deadline:
			b, _ := os.ReadFile(log.Name())
			tb.Fatalf("services: the child %s not up within %v:\n%s", test, timeout, TailLines(string(b), 60))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Kill kills the child (SIGKILL) and waits for it to end. It is
// idempotent.
func (c *Child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	err := <-c.done
	c.done <- err
}

// MarkUp writes the file a child's env variable names: its set-up is up.
func MarkUp(tb testing.TB, path string) {
	tb.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// TailLines returns the last n lines of s.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PidsNaming returns the processes, other than this one, whose command
// line contains s.
func PidsNaming(s string) []int {
	self := os.Getpid()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Settled is the readiness of a component without a health check a test
// can read: it answers once the component has had 2 s to fail on its
// flags.
func Settled(name string) func(context.Context) error {
	since := time.Now()
	return func(context.Context) error {
		if time.Since(since) < 2*time.Second {
			return fmt.Errorf("%s: giving it 2 s to fail on its flags", name)
		}
		return nil
	}
}
