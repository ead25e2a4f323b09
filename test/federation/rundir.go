package federation

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// stateRoot holds one directory per run, named by the test binary's
// process id. Every process of a run names its directory on its command
// line (data dir, kubeconfig or certificates), which is how a later run
// finds what a killed one left.
var stateRoot = filepath.Join(os.TempDir(), "carbongate-federation")

// newRunDir cleans up after runs whose test binary is gone, then makes
// this run's directory and removes it at cleanup (registered first, so it
// runs after the processes' own kills).
func newRunDir(tb testing.TB) string {
	tb.Helper()
	if err := cleanStaleRuns(tb.Logf); err != nil {
		tb.Fatalf("federation: cleaning up after an earlier run: %v", err)
	}
	dir := filepath.Join(stateRoot, strconv.Itoa(os.Getpid()))
	if err := os.RemoveAll(dir); err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("federation: %v", err)
		}
	})
	return dir
}

// cleanStaleRuns kills the processes of every run directory whose test
// binary no longer runs and removes the directory.
func cleanStaleRuns(logf func(string, ...any)) error {
	ents, err := os.ReadDir(stateRoot)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || alive(pid) {
			continue
		}
		dir := filepath.Join(stateRoot, e.Name())
		if n := killNaming(dir + "/"); n > 0 {
			logf("federation: killed %d processes of the earlier run in %s", n, dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}

func alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// killNaming SIGKILLs every process whose command line contains s, waits
// up to 10 s for them to go and returns how many there were.
func killNaming(s string) int {
	pids := services.PidsNaming(s)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(services.PidsNaming(s)) > 0; {
		time.Sleep(100 * time.Millisecond)
	}
	return len(pids)
}
