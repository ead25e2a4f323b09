package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// What the cluster changes on the host carries these names, so that a
// teardown finds it again after a killed run (and touches nothing else).
const (
	// StateDir holds every file of the cluster: processes whose command
	// line names it are the cluster's.
	StateDir     = "/tmp/carbongate-cluster"
	lockPath     = StateDir + ".lock"
	nodeBridge   = "cgknode0" // an empty bridge carrying the nodes' IPs
	cniPrefix    = "cgkcni"   // the pods' bridges: cgkcni0, cgkcni1, …
	namePrefix   = "carbongate-node-"
	savedSysctls = "sysctl.saved"
)

// Addresses: private ranges on bridges the cluster creates, nothing routed
// off the machine.
const (
	apiServerIP = "10.212.0.1" // node 0's IP; the API server binds here
	serviceCIDR = "10.214.0.0/16"
	serviceIP   = "10.214.0.1" // the kubernetes Service
	podCIDR     = "10.213.0.0/16"
	kwokCIDR    = "10.213.200.0/24"
	kwokNodeIP  = "10.212.0.200"
)

// nodeIP and nodeSubnet are real node i's address and pod subnet.
func nodeIP(i int) string     { return fmt.Sprintf("10.212.0.%d", i+1) }
func nodeSubnet(i int) string { return fmt.Sprintf("10.213.%d.0/24", i) }

// sysctls are what the kubelet, the bridge plugin and kube-proxy set on
// the host; Start saves them and the teardown puts them back.
var sysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward",
	"net.ipv4.conf.all.route_localnet", "net.bridge.bridge-nf-call-iptables",
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

// saveSysctls writes the current values to the state directory.
func saveSysctls() error {
	var b strings.Builder
	for _, s := range sysctls {
		v, err := os.ReadFile(sysctlPath(s))
		if err != nil {
			continue // absent on this kernel (no br_netfilter)
		}
		fmt.Fprintf(&b, "%s=%s\n", s, strings.TrimSpace(string(v)))
	}
	return os.WriteFile(filepath.Join(StateDir, savedSysctls), []byte(b.String()), 0o600)
}

// restoreSysctls puts back the values saveSysctls wrote.
func restoreSysctls(logf func(string, ...any)) error {
	b, err := os.ReadFile(filepath.Join(StateDir, savedSysctls))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var errs []error
	for line := range strings.Lines(string(b)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		cur, _ := os.ReadFile(sysctlPath(name))
		if strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile(sysctlPath(name), []byte(v), 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		logf("teardown: %s %s -> %s", name, strings.TrimSpace(string(cur)), v)
	}
	return errors.Join(errs...)
}

// lockHost takes the host-wide lock that keeps two clusters from sharing
// the fixed names, waiting up to wait; release unlocks.
func lockHost(wait time.Duration) (release func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another test cluster holds %s after %v", lockPath, wait)
		}
		time.Sleep(time.Second)
	}
}

// run runs a command with a minute's deadline and returns its combined
// output.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return runContext(ctx, name, args...)
}

// addBridge creates an up bridge named name carrying addrs (CIDRs).
func addBridge(name string, addrs ...string) error {
	if _, err := run("ip", "link", "add", name, "type", "bridge"); err != nil {
		return err
	}
	for _, a := range addrs {
		if _, err := run("ip", "addr", "add", a, "dev", name); err != nil {
			return err
		}
	}
	_, err := run("ip", "link", "set", name, "up")
	return err
}

// cgroupControllers are the cgroup v1 hierarchies a kubelet with the
// cgroupfs driver uses.
var cgroupControllers = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd", "hugetlb", "net_cls", "net_prio", "perf_event"}

// makeCgroupRoot creates /NAME in every mounted v1 hierarchy (cpuset with
// its parent's cpus and mems, which a new cpuset lacks).
func makeCgroupRoot(name string) error {
	for _, c := range cgroupControllers {
		base := filepath.Join("/sys/fs/cgroup", c)
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(base, name), 0o755); err != nil {
			return err
		}
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuset", f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join("/sys/fs/cgroup/cpuset", name, f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ourCgroups lists the cgroups of the cluster's nodes in every hierarchy,
// with the cgroup v2 one of a hybrid host ("unified"), where runc puts
// each container too.
func ourCgroups() []string {
	var dirs []string
	for _, c := range append(slices.Clone(cgroupControllers), "unified") {
		m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", c, namePrefix+"*"))
		dirs = append(dirs, m...)
	}
	return dirs
}

// ourPids lists the processes whose command line names the state
// directory, and every process in the nodes' cgroups (the containers).
func ourPids() []int {
	self := os.Getpid()
	pids := services.PidsNaming(StateDir + "/")
	for _, d := range ourCgroups() {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid != self && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// killOurs kills the cluster's processes: SIGTERM, then SIGKILL to what is
// left after grace.
func killOurs(logf func(string, ...any), grace time.Duration) error {
	pids := ourPids()
	if len(pids) == 0 {
		return nil
	}
	logf("teardown: stopping %d processes", len(pids))
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && len(ourPids()) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	for range 50 {
		left := ourPids()
		if len(left) == 0 {
			return nil
		}
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("processes still alive: %v", ourPids())
}

// ourMounts lists the mount points under the state directory, deepest
// first.
func ourMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == StateDir || strings.HasPrefix(fields[4], StateDir+"/")) {
			ms = append(ms, fields[4])
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return ms, sc.Err()
}

func unmountOurs(logf func(string, ...any)) error {
	for range 5 {
		ms, err := ourMounts()
		if err != nil || len(ms) == 0 {
			return err
		}
		for _, m := range ms {
			if err := syscall.Unmount(m, 0); err != nil {
				syscall.Unmount(m, syscall.MNT_DETACH)
			}
		}
		logf("teardown: unmounted %d mounts", len(ms))
	}
	ms, _ := ourMounts()
	return fmt.Errorf("mounts left: %v", ms)
}

// deleteLinks deletes the cluster's bridges and the veths left on them.
func deleteLinks(logf func(string, ...any)) error {
	out, err := run("ip", "-o", "link", "show")
	if err != nil {
		return err
	}
	var errs []error
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if name == nodeBridge || strings.HasPrefix(name, cniPrefix) || strings.Contains(line, " master "+cniPrefix) {
			if _, err := run("ip", "link", "del", name); err != nil && !strings.Contains(err.Error(), "Cannot find") {
				errs = append(errs, err)
				continue
			}
			logf("teardown: deleted link %s", name)
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the nodes' cgroups, deepest first.
func removeCgroups() error {
	var errs []error
	for _, d := range ourCgroups() {
		var dirs []string
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for _, p := range slices.Backward(dirs) {
			if err := syscall.Rmdir(p); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeFixedPaths removes what the kubelets, the CNI plugins and
// containerd put outside the state directory: their files, then the
// directories when left empty.
func removeFixedPaths() {
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, l := range links {
		if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, StateDir+"/") {
			os.Remove(l)
		}
	}
	results, _ := filepath.Glob("/var/lib/cni/results/" + namePrefix + "*")
	for _, r := range results {
		os.Remove(r)
	}
	os.Remove("/var/lib/kubelet/device-plugins/kubelet.sock")
	for _, d := range []string{
		"/var/log/containers", "/var/lib/cni/results", "/var/lib/cni", "/var/lib/kubelet/device-plugins",
		"/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins", "/var/lib/kubelet",
		"/usr/libexec/kubernetes/kubelet-plugins/volume/exec", "/usr/libexec/kubernetes/kubelet-plugins/volume",
		"/usr/libexec/kubernetes/kubelet-plugins", "/usr/libexec/kubernetes",
		"/run/containerd/s", "/run/containerd/fifo", "/run/containerd/runc/k8s.io", "/run/containerd/runc", "/run/containerd",
		"/opt/containerd/bin", "/opt/containerd/lib", "/opt/containerd",
	} {
		syscall.Rmdir(d) // only when empty: someone else's files stay
	}
}
