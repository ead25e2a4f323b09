//go:build interop

package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/test/services"
)

// killedChild, when set, makes TestKilledRun the run that is killed: it
// starts a cluster with a running pod, writes the file it names and waits.
const killedChild = "CARBONGATE_CLUSTER_KILLED_CHILD"

// TestKilledRun kills (SIGKILL) a test binary whose cluster runs a pod on
// a real node, then checks that the next start's teardown leaves the host
// as it was before: no process, mount, bridge, veth, route, cgroup or iptables
// rule of the cluster, the sysctls the kubelet changed back to their
// values, the state directory gone.
func TestKilledRun(t *testing.T) {
	if marker := os.Getenv(killedChild); marker != "" {
		runKilledChild(t, marker)
		return
	}
	before := cleanSnapshot(t)
	services.StartChild(t, "TestKilledRun", killedChild, 8*time.Minute).Kill()
	if len(ourPids()) == 0 {
		t.Fatal("nothing of the killed run is left to clean: the test would prove nothing")
	}
	release, err := lockHost(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	start := time.Now()
	if err := Teardown(t.Logf, ""); err != nil {
		t.Fatalf("teardown after a killed run: %v", err)
	}
	t.Logf("figures: teardown after a killed run %v", time.Since(start).Round(100*time.Millisecond))
	after := hostSnapshot(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s after teardown:\n%s\nbefore the run:\n%s", k, after[k], v)
		}
	}
}

func runKilledChild(t *testing.T, marker string) {
	c := Start(t, Options{Regions: []string{"westeurope"}, KwokRegions: []string{"polandcentral"}})
	firstPod(t, c)
	if _, err := c.Kube.CoreV1().Pods("default").Get(context.Background(), "first", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	services.MarkUp(t, marker)
	time.Sleep(5 * time.Minute) // killed long before
}

// cleanSnapshot cleans up after any earlier run and returns the host's
// snapshot then.
func cleanSnapshot(t *testing.T) map[string]string {
	t.Helper()
	release, err := lockHost(20 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := Teardown(t.Logf, ""); err != nil {
		t.Fatal(err)
	}
	return hostSnapshot(t)
}

// hostSnapshot is what a cluster run must leave as it found: its
// processes, mounts, cgroups and state directory (none), the links, the
// routes, the iptables rules and the sysctls.
func hostSnapshot(t *testing.T) map[string]string {
	t.Helper()
	s := map[string]string{}
	if pids := ourPids(); len(pids) > 0 {
		s["processes"] = fmt.Sprint(pids)
	}
	ms, err := ourMounts()
	if err != nil {
		t.Fatal(err)
	}
	s["mounts"] = strings.Join(ms, " ")
	s["cgroups"] = strings.Join(ourCgroups(), " ")
	if _, err := os.Stat(StateDir); err == nil {
		s["state dir"] = StateDir
	}
	links, err := run("ip", "-o", "link", "show")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for line := range strings.Lines(links) {
		if f := strings.Fields(line); len(f) > 1 {
			names = append(names, f[1])
		}
	}
	slices.Sort(names)
	s["links"] = strings.Join(names, " ")
	for _, family := range []string{"-4", "-6"} {
		routes, err := run("ip", family, "route", "show")
		if err != nil {
			t.Fatal(err)
		}
		s["routes "+family] = routes
	}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := run(ipt, "-w", "-t", table, "-S")
			if err != nil {
				t.Fatal(err)
			}
			s[ipt+" -t "+table] = out
		}
	}
	for _, name := range sysctls {
		b, _ := os.ReadFile(sysctlPath(name))
		s[name] = strings.TrimSpace(string(b))
	}
	return s
}
