//go:build interop

package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/test/services"
)

// kubeUpProcs are the processes make kube-up starts, by pid file name.
var kubeUpProcs = []string{"etcd", "kube-apiserver", "carbongate"}

// TestKubeUp runs make kube-up as a user would (in the clone: it builds
// bin/ and trains the models of make run when they are absent; its state
// goes to a temp dir through KUBE_DIR), follows the lines it prints —
// the KUBECONFIG export and the kubectl apply of the example — and checks
// the stored VmTemplate carries the decision. It logs the time from the
// start of make kube-up to the scheduled object (warm goal: under 30 s).
// A second make kube-up must say it is up and print the same lines; make
// kube-down must stop every process it started and remove the state, and
// a second make kube-down must do nothing. The machine's kubectl is hidden
// behind one that says it is 1.20, as on a machine with an old kubectl or
// none: make kube-up must use the one test/setup/kube.sh builds. It runs
// kube-up's API-server mode (KUBE_MODE=apiserver: what a user who is not
// root gets); the real cluster kube-up starts as root is test/cluster's,
// which TestCluster runs.
func TestKubeUp(t *testing.T) {
	root := services.RepoRoot(t)
	state := filepath.Join(t.TempDir(), "kube")
	oldKubectl(t)
	t.Setenv("KUBE_MODE", "apiserver")
	t.Cleanup(func() {
		if _, err := os.Stat(state); err == nil {
			out, err := makeTarget(root, state, "kube-down")
			if err != nil {
				t.Errorf("make kube-down at cleanup: %v\n%s", err, out)
			}
		}
	})

	start := time.Now()
	out, err := makeTarget(root, state, "kube-up")
	if err != nil {
		t.Fatalf("make kube-up: %v\n%s%s", err, out, stateLogs(state))
	}
	up := time.Since(start)
	if !strings.Contains(string(out), "using the kubectl built by test/setup/kube.sh") {
		t.Errorf("make kube-up did not say it used the kubectl kube.sh builds, with only a 1.20 on PATH:\n%s", out)
	}
	kubeconfig, applies := followLines(t, out)
	// As a user would: the PATH line it prints for the kubectl it built.
	prefix, ok := printedPath(out)
	if !ok {
		t.Fatalf("make kube-up printed no export PATH= line for its kubectl, with only a 1.20 on PATH:\n%s", out)
	}
	t.Setenv("PATH", prefix+string(os.PathListSeparator)+os.Getenv("PATH"))
	if got, want := kubeconfig, filepath.Join(state, "kubeconfig"); got != want {
		t.Fatalf("export KUBECONFIG=%s, want %s", got, want)
	}
	if len(applies) != 2 {
		t.Fatalf("make kube-up suggests %d kubectl apply lines, want the VmTemplate's and the Job's", len(applies))
	}
	apply := applies[0]
	if b, err := kubectl(root, kubeconfig, apply...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(apply, " "), err, b, stateLogs(state))
	}
	b, err := kubectl(root, kubeconfig, "get", "vmtemplate", "batch-1", "-n", "jobs", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get: %v\n%s", err, b)
	}
	scheduled := time.Since(start)
	checkScheduled(t, b)
	t.Logf("make kube-up in %v; from its start to a scheduled VmTemplate: %v (goal when warm: < 30s)",
		up.Round(100*time.Millisecond), scheduled.Round(100*time.Millisecond))

	checkHeldJob(t, root, kubeconfig, applies[1], state)

	again, err := makeTarget(root, state, "kube-up")
	if err != nil {
		t.Fatalf("make kube-up again: %v\n%s", err, again)
	}
	if !strings.Contains(string(again), "kube-up: already up") {
		t.Errorf("make kube-up again does not say it is up:\n%s", again)
	}
	if k, a := followLines(t, again); k != kubeconfig || !slices.EqualFunc(a, applies, slices.Equal) {
		t.Errorf("make kube-up again printed KUBECONFIG=%s and kubectl %v, want %s and %v", k, a, kubeconfig, applies)
	}

	pids := map[string]int{}
	for _, name := range kubeUpProcs {
		b, err := os.ReadFile(filepath.Join(state, name+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s.pid: %v", name, err)
		}
		// Positive control: the check below would see it running.
		if !alive(pid) {
			t.Fatalf("%s (pid %d) is not running while kube-up is up", name, pid)
		}
		pids[name] = pid
	}
	downStart := time.Now()
	if out, err := makeTarget(root, state, "kube-down"); err != nil {
		t.Fatalf("make kube-down: %v\n%s", err, out)
	}
	t.Logf("make kube-down in %v", time.Since(downStart).Round(100*time.Millisecond))
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still runs after make kube-down", name, pid)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state %s is still there after make kube-down (%v)", state, err)
	}
	if out, err := makeTarget(root, state, "kube-down"); err != nil || !strings.Contains(string(out), "nothing is up") {
		t.Errorf("make kube-down when down: %v\n%s", err, out)
	}
}

// makeTarget runs make target in root with KUBE_DIR=state and returns its
// combined output. make's own variables from an enclosing make (make test)
// are dropped: they name a jobserver this make cannot reach.
// oldKubectl puts first on the PATH of make's commands (t.Setenv: the test
// must not be parallel) a kubectl that reports client version 1.20 and
// refuses everything else.
func oldKubectl(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	shim := "#!/bin/sh\nif [ \"$1 $2 $3 $4\" = \"version --client -o json\" ]; then\n" +
		"  printf '{\\n  \"clientVersion\": {\\n    \"major\": \"1\",\\n    \"minor\": \"20\"\\n  }\\n}\\n'; exit 0\nfi\n" +
		"echo \"kubectl 1.20 stand-in: $*\" >&2; exit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func makeTarget(root, state, target string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", target, "KUBE_DIR="+state)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd.CombinedOutput()
}

func kubectl(root, kubeconfig string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return append(stdout.Bytes(), stderr.Bytes()...), err
	}
	return stdout.Bytes(), nil
}

// checkHeldJob applies the Job example as docs/kubernetes.md says and checks the
// stored Job is suspended with its decision, then released by the
// controller (the replay clock runs at REPLAY_SPEED 360: at most five
// hours of waiting take 50 s).
func checkHeldJob(t *testing.T, root, kubeconfig string, apply []string, state string) {
	t.Helper()
	if b, err := kubectl(root, kubeconfig, apply...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(apply, " "), err, b, stateLogs(state))
	}
	var job struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Suspend *bool `json:"suspend"`
		} `json:"spec"`
	}
	get := func() {
		b, err := kubectl(root, kubeconfig, "get", "job", "render", "-n", "batch", "-o", "json")
		if err != nil {
			t.Fatalf("kubectl get job: %v\n%s", err, b)
		}
		if err := json.Unmarshal(b, &job); err != nil {
			t.Fatal(err)
		}
	}
	get()
	if job.Spec.Suspend == nil || !*job.Spec.Suspend || job.Metadata.Labels["carbongate.io/hold"] != "held" {
		if job.Metadata.Labels["carbongate.io/hold"] != "released" { // released already is fine: its time was now
			t.Fatalf("the stored Job is not held: suspend=%v labels=%v annotations=%v", job.Spec.Suspend, job.Metadata.Labels, job.Metadata.Annotations)
		}
	}
	t.Logf("Job held for %s in %s (saving %s %%, %s g avoided)", job.Metadata.Annotations["carbongate.io/scheduling-time"],
		job.Metadata.Annotations["carbongate.io/scheduling-region"], job.Metadata.Annotations["carbongate.io/savings-pct"], job.Metadata.Annotations["carbongate.io/avoided-g"])
	held := time.Now()
	eventually(t, 90*time.Second, "the Job released", func() error {
		get()
		if job.Spec.Suspend != nil && *job.Spec.Suspend {
			return errors.New("still suspended")
		}
		return nil
	})
	t.Logf("Job released after %v (wall), reason %s", time.Since(held).Round(100*time.Millisecond), job.Metadata.Annotations["carbongate.io/release-reason"])
}

// followLines finds the lines make kube-up tells the user to run: the
// KUBECONFIG path and the arguments of each kubectl apply.
// printedPath is the directory of make kube-up's "export PATH=DIR:$PATH" line.
func printedPath(out []byte) (string, bool) {
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export PATH="); ok {
			return strings.TrimSuffix(v, ":$PATH"), true
		}
	}
	return "", false
}

func followLines(t *testing.T, out []byte) (kubeconfig string, applies [][]string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "export KUBECONFIG="); ok {
			kubeconfig = v
		}
		if v, ok := strings.CutPrefix(line, "kubectl apply "); ok {
			applies = append(applies, append([]string{"apply"}, strings.Fields(v)...))
		}
	}
	if kubeconfig == "" || applies == nil {
		t.Fatalf("make kube-up printed no export KUBECONFIG= or kubectl apply line:\n%s", out)
	}
	return kubeconfig, applies
}

// checkScheduled checks the stored VmTemplate (JSON) carries carbongate's
// decision: region, time and a provenance annotation that agrees.
func checkScheduled(t *testing.T, b []byte) {
	t.Helper()
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Provider         string `json:"provider"`
			SchedulingRegion string `json:"schedulingRegion"`
			SchedulingTime   string `json:"schedulingTime"`
			InstanceType     string `json:"instanceType"`
			MinCPU           int    `json:"minCPU"`
			MinRAM           string `json:"minRAM"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("kubectl get -o json: %v\n%s", err, b)
	}
	if obj.Spec.SchedulingRegion == "" || obj.Spec.SchedulingTime == "" || obj.Spec.Provider != "azure" {
		t.Fatalf("the stored VmTemplate is not scheduled: %s", b)
	}
	var prov struct {
		Region string `json:"region"`
		Start  string `json:"start"`
	}
	if err := json.Unmarshal([]byte(obj.Metadata.Annotations["carbongate.io/provenance"]), &prov); err != nil {
		t.Fatalf("carbongate.io/provenance: %v\n%s", err, b)
	}
	if prov.Region != obj.Spec.SchedulingRegion || prov.Start != obj.Spec.SchedulingTime {
		t.Errorf("provenance says %s at %s, the spec %s at %s", prov.Region, prov.Start, obj.Spec.SchedulingRegion, obj.Spec.SchedulingTime)
	}
	// The instance type the catalog fits to the template's size.
	ram, err := resource.ParseQuantity(obj.Spec.MinRAM)
	if err != nil {
		t.Fatalf("spec.minRAM %q: %v", obj.Spec.MinRAM, err)
	}
	cat, err := instances.Load("azure")
	if err != nil {
		t.Fatal(err)
	}
	fit, err := cat.Fit(instances.Request{MinCPU: obj.Spec.MinCPU, MinRAMGiB: ram.AsApproximateFloat64() / (1 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Spec.InstanceType != fit.Choice.Type.Name {
		t.Errorf("spec.instanceType %q, want %q (%d vCPUs, %s)", obj.Spec.InstanceType, fit.Choice.Type.Name, obj.Spec.MinCPU, obj.Spec.MinRAM)
	}
	t.Logf("stored: %s at %s on %s", obj.Spec.SchedulingRegion, obj.Spec.SchedulingTime, obj.Spec.InstanceType)
}

// alive reports whether pid runs (exists and is not a zombie: processes
// make kube-up started outlive it and are reaped by whoever adopts them,
// perhaps late).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may hold
	// spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// stateLogs returns the end of each process's log in the state dir.
func stateLogs(state string) string {
	var sb strings.Builder
	for _, name := range kubeUpProcs {
		if b, err := os.ReadFile(filepath.Join(state, name+".log")); err == nil {
			sb.WriteString("\n--- " + name + ".log (tail)\n" + tail(string(b), 3000))
		}
	}
	return sb.String()
}
