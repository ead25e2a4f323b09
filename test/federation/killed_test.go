//go:build interop

package federation

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/cluster"
)

// killedChild, when set, makes TestKilledRun the run that is killed: it
// starts a federation with one member, writes the file it names and waits.
const killedChild = "CARBONGATE_FEDERATION_KILLED_CHILD"

// TestKilledRun kills (SIGKILL) a test binary whose federation runs, then
// checks that none of its processes outlives it and that the next Start's
// clean-up removes its state directory.
func TestKilledRun(t *testing.T) {
	if marker := os.Getenv(killedChild); marker != "" {
		Start(t, Options{Members: threeRegions.Members[:1]})
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute) // killed long before
		return
	}
	marker := filepath.Join(t.TempDir(), "up")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKilledRun$", "-test.v", "-test.timeout", "10m")
	cmd.Env = append(os.Environ(), killedChild+"="+marker)
	log, err := os.Create(filepath.Join(t.TempDir(), "child.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cluster.Eventually(t, 5*time.Minute, "the child's federation up", func(context.Context) error {
		select {
		case err := <-done:
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("the child ended (%v) before its federation was up:\n%s", err, b)
		default:
		}
		_, err := os.Stat(marker)
		return err
	})
	dir := filepath.Join(stateRoot, strconv.Itoa(cmd.Process.Pid)) + "/"
	if n := len(pidsNaming(dir)); n < 9 { // Karmada's 7 and the member's etcd and kube-apiserver
		t.Fatalf("%d processes name %s while the child runs, want Karmada's and its member's: the test would prove nothing", n, dir)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	cluster.Eventually(t, 30*time.Second, "the killed run's processes gone", func(context.Context) error {
		if pids := pidsNaming(dir); len(pids) > 0 {
			return fmt.Errorf("processes %v still name %s", pids, dir)
		}
		return nil
	})
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed run left no state directory: the test would prove nothing (%v)", err)
	}
	if err := cleanStaleRuns(t.Logf); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s after the clean-up: %v", dir, err)
	}
}
