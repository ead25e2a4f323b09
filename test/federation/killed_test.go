//go:build interop

package federation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/cluster"

	"github.com/carbongate/carbongate/test/services"
)

// killedChild, when set, makes TestKilledRun the run that is killed: it
// starts a federation with one member, writes the file it names and waits.
const killedChild = "CARBONGATE_FEDERATION_KILLED_CHILD"

// TestKilledRun kills (SIGKILL) a test binary whose federation runs, then
// checks that none of its processes outlives it and that the next Start's
// clean-up removes its state directory.
func TestKilledRun(t *testing.T) {
	if marker := os.Getenv(killedChild); marker != "" {
		Start(t, Options{Members: ThreeRegions.Members[:1]})
		services.MarkUp(t, marker)
		time.Sleep(5 * time.Minute) // killed long before
		return
	}
	child := services.StartChild(t, "TestKilledRun", killedChild, 5*time.Minute)
	dir := filepath.Join(stateRoot, strconv.Itoa(child.Pid())) + "/"
	if n := len(services.PidsNaming(dir)); n < 9 { // Karmada's 7 and the member's etcd and kube-apiserver
		t.Fatalf("%d processes name %s while the child runs, want Karmada's and its member's: the test would prove nothing", n, dir)
	}
	child.Kill()
	cluster.Eventually(t, 30*time.Second, "the killed run's processes gone", func(context.Context) error {
		if pids := services.PidsNaming(dir); len(pids) > 0 {
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
