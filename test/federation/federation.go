// Package federation runs a Karmada federation for tests on this host:
// Karmada's control plane (a kube-apiserver and etcd as its API server,
// Karmada's CRDs, its own admission webhooks, its aggregated API server,
// controller-manager and scheduler, and a kube-controller-manager for
// namespace and garbage collection) and member clusters, each a bare
// kube-apiserver and etcd registered in Push mode with its provider and
// region. Nothing runs a kubelet: workloads propagate to the members as
// objects. Every process is killed at cleanup and with the test binary
// (the kernel's parent-death signal); the state of a killed run is removed
// by the next Start. It needs the binaries of test/setup/kube.sh
// (KUBEBUILDER_ASSETS), test/setup/node.sh (CARBONGATE_NODE_DIR: its
// kube-controller-manager) and test/setup/karmada.sh (CARBONGATE_KARMADA_DIR);
// when a variable is unset it runs the script.
package federation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/test/services"
)

// Member is a member cluster to run: its name in Karmada and the place its
// Cluster object declares (spec.provider, spec.region).
type Member struct {
	Name     string
	Provider string
	Region   string
}

// Options say which members to run.
type Options struct {
	Members []Member
}

// ThreeRegions are the members of the tests and of make karmada-up: one
// cluster per region, two providers, three grid zones (SE, PL, DE).
var ThreeRegions = Options{Members: []Member{
	{Name: "member-se", Provider: "azure", Region: "swedencentral"},
	{Name: "member-pl", Provider: "azure", Region: "polandcentral"},
	{Name: "member-de", Provider: "gcp", Region: "europe-west3"},
}}

// APIServer is a running kube-apiserver and its admin clients.
type APIServer struct {
	URL        string
	Kubeconfig string // admin (system:masters), client certificate
	Config     *rest.Config
	Kube       kubernetes.Interface
	Dynamic    dynamic.Interface
	PKI        *services.PKI // its CA (ca.crt) and serving certificate
	// Token is a bearer token of an admin (system:masters) user.
	Token string
	// WebhookCA, on Karmada's API server only, signed the client
	// certificate it presents to every admission webhook.
	WebhookCA *services.CA

	etcd string // its etcd's client URL
}

// Cluster is a running member cluster.
type Cluster struct {
	Member
	*APIServer
}

// Federation is a running Karmada control plane and its members.
type Federation struct {
	// Karmada is Karmada's API server: PropagationPolicies, workloads,
	// ResourceBindings and Clusters are created and read here.
	Karmada *APIServer
	Members []*Cluster

	tb    testing.TB
	dir   string // this run's state
	bins  binaries
	start time.Time
}

// Start runs a federation for tb and tears it down at cleanup. Every
// failure to set up fails tb.
func Start(tb testing.TB, opts Options) *Federation {
	tb.Helper()
	f := &Federation{tb: tb, bins: findBinaries(tb), start: time.Now()}
	f.dir = newRunDir(tb)
	f.Karmada = f.startAPIServer("karmada", true)
	f.startKarmada()
	tb.Logf("federation: Karmada control plane ready %v after start", time.Since(f.start).Round(time.Millisecond))
	for _, m := range opts.Members {
		f.Members = append(f.Members, &Cluster{Member: m, APIServer: f.startAPIServer(m.Name, false)})
	}
	for _, m := range f.Members {
		f.register(m)
	}
	f.waitMembersReady()
	tb.Logf("federation: %d members Ready, set-up %v", len(f.Members), time.Since(f.start).Round(time.Millisecond))
	return f
}

// Member returns the running member named name; an unknown name fails tb.
func (f *Federation) Member(name string) *Cluster {
	for _, m := range f.Members {
		if m.Name == name {
			return m
		}
	}
	f.tb.Fatalf("federation: no member %q", name)
	return nil
}

// binaries are the directories of the setup scripts' output.
type binaries struct {
	kube    string // etcd, kube-apiserver, kubectl (test/setup/kube.sh)
	node    string // bin/kube-controller-manager (test/setup/node.sh)
	karmada string // karmada-*, crds/, webhook-configuration.yaml (test/setup/karmada.sh)
}

func findBinaries(tb testing.TB) binaries {
	tb.Helper()
	b := binaries{
		kube:    envOrSetup(tb, "KUBEBUILDER_ASSETS", "kube.sh"),
		node:    envOrSetup(tb, "CARBONGATE_NODE_DIR", "node.sh"),
		karmada: envOrSetup(tb, "CARBONGATE_KARMADA_DIR", "karmada.sh"),
	}
	for _, p := range []string{filepath.Join(b.kube, "kube-apiserver"), filepath.Join(b.kube, "etcd"), filepath.Join(b.kube, "kubectl"),
		filepath.Join(b.node, "bin", "kube-controller-manager"), filepath.Join(b.karmada, "karmada-controller-manager"),
		filepath.Join(b.karmada, "crds"), filepath.Join(b.karmada, "webhook-configuration.yaml")} {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("federation: %v (KUBEBUILDER_ASSETS from test/setup/kube.sh, CARBONGATE_NODE_DIR from test/setup/node.sh, "+
				"CARBONGATE_KARMADA_DIR from test/setup/karmada.sh)", err)
		}
	}
	return b
}

func envOrSetup(tb testing.TB, env, script string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	return services.Setup(tb, script)
}

// path makes and returns a directory under the run's state.
func (f *Federation) path(parts ...string) string {
	d := filepath.Join(append([]string{f.dir}, parts...)...)
	if err := os.MkdirAll(d, 0o700); err != nil {
		f.tb.Fatal(err)
	}
	return d
}

// WriteFile writes a file under the run's state (removed with it) and
// returns its path.
func (f *Federation) WriteFile(name string, content []byte) string {
	p := filepath.Join(f.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		f.tb.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o600); err != nil {
		f.tb.Fatal(err)
	}
	return p
}

// CPU is the CPU time each of the federation's processes has used so far,
// by its command and the part of the federation it serves (the first
// directory of the state directory its command line names: karmada or a
// member's name).
func (f *Federation) CPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, pid := range services.PidsNaming(f.dir + "/") {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		cmd, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || err2 != nil {
			continue // ended since it was listed
		}
		part, _, _ := strings.Cut(string(cmd)[strings.Index(string(cmd), f.dir+"/")+len(f.dir)+1:], "/")
		out[strings.TrimSpace(string(comm))+" "+part] += services.ProcCPU(f.tb, pid)
	}
	return out
}

// RSSMiB is the resident memory of the federation's processes (those whose
// command line names its state directory), in MiB.
func (f *Federation) RSSMiB() (processes int, mib float64) {
	pids := services.PidsNaming(f.dir + "/")
	var kib int64
	for _, pid := range pids {
		kib += services.ProcStatus(f.tb, pid, "VmRSS")
	}
	return len(pids), float64(kib) / 1024
}
