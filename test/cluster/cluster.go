// Package cluster runs a real Kubernetes cluster for tests on this host:
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler; real
// nodes (a kubelet with its own containerd, cgroup root, CNI bridge and
// subnet each, one region each); kwok's fake nodes for further regions;
// kube-proxy for Services; CoreDNS behind the kube-dns Service for the
// pods' DNS. Everything it changes on the host is named so that Teardown
// finds it again, and Start runs Teardown first to clean up after a killed
// run. It needs root, Linux with cgroup v1, and the binaries of
// test/setup/kube.sh (KUBEBUILDER_ASSETS), test/setup/node.sh
// (CARBONGATE_NODE_DIR) and test/setup/coredns.sh (CARBONGATE_COREDNS);
// when the variables are unset it runs the scripts.
package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/carbongate/carbongate/test/services"
)

// Options say which nodes to run.
type Options struct {
	// Regions: one real node per region (topology.kubernetes.io/region).
	Regions []string
	// KwokRegions: one kwok fake node per region.
	KwokRegions []string
	// Images are OCI archives imported into every real node's containerd
	// (pods name them with imagePullPolicy Never).
	Images []string
}

// Cluster is a running cluster.
type Cluster struct {
	Kubeconfig string // cluster admin
	Config     *rest.Config
	Kube       kubernetes.Interface
	Server     string   // the API server's URL
	Nodes      []string // real nodes, in Options.Regions' order
	KwokNodes  []string // fake nodes, in Options.KwokRegions' order
	// PauseImage is the sandbox image, present on every real node: a
	// process that sleeps until stopped.
	PauseImage string
	// WebhookCA signed the client certificate the API server presents to
	// every admission webhook.
	WebhookCA *services.CA

	tb      testing.TB
	bin     string // kubelet, kubectl, containerd, … (test/setup/node.sh)
	control string // kube-apiserver and etcd (test/setup/kube.sh)
	coredns string // test/setup/coredns.sh
	pki     *services.PKI
	logf    func(string, ...any)
}

// Start runs a cluster for tb and tears it down at cleanup. Every failure
// to set up fails tb: a host that cannot run the cluster is a failure,
// never a skip.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	begin := time.Now()
	if os.Geteuid() != 0 {
		tb.Fatal("cluster: a real cluster needs root (kubelet, containerd, bridges, cgroups)")
	}
	c := &Cluster{tb: tb, logf: tb.Logf}
	c.control, c.bin = binaries(tb)
	c.coredns = services.Tool(tb, "CARBONGATE_COREDNS", "coredns.sh")
	release, err := lockHost(20 * time.Minute)
	if err != nil {
		tb.Fatalf("cluster: %v", err)
	}
	kubeProxy := filepath.Join(c.bin, "bin", "kube-proxy")
	if err := Teardown(c.logf, kubeProxy); err != nil {
		release()
		tb.Fatalf("cluster: cleaning up after an earlier run: %v", err)
	}
	// Registered first, so it runs last: after the processes' own kills.
	tb.Cleanup(func() {
		defer release()
		if err := Teardown(c.logf, kubeProxy); err != nil {
			tb.Errorf("cluster: teardown: %v", err)
		}
	})
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := saveSysctls(); err != nil {
		tb.Fatalf("cluster: saving sysctls: %v", err)
	}
	if err := addBridge(nodeBridge, nodeAddrs(len(opts.Regions))...); err != nil {
		tb.Fatalf("cluster: node bridge: %v", err)
	}
	// ClusterIPs are routed onto the node bridge (the route goes with it):
	// one kube-proxy has not programmed yet is unreachable, as in a real
	// cluster, instead of going out the default route to whatever answers
	// there (this host's egress answers HTTP on any address, and a client
	// keeps that connection).
	if _, err := run("ip", "route", "add", serviceCIDR, "dev", nodeBridge); err != nil {
		tb.Fatalf("cluster: route for the Services: %v", err)
	}
	c.startControlPlane()
	c.startDNS()
	c.logf("cluster: control plane and DNS ready %v after start", time.Since(begin).Round(time.Millisecond))
	pause := filepath.Join(c.bin, "pause.oci.tar")
	c.PauseImage = strings.TrimSpace(c.readFile(filepath.Join(c.bin, "pause.image")))
	for i, region := range opts.Regions {
		c.Nodes = append(c.Nodes, c.startNode(i, region, append([]string{pause}, opts.Images...)))
	}
	c.startKubeProxy()
	if len(opts.KwokRegions) > 0 {
		c.KwokNodes = c.startKwok(opts.KwokRegions)
	}
	c.waitReady()
	c.waitDNS()
	tb.Cleanup(c.drain) // runs first: workloads go while the kubelets still run
	c.logf("cluster: %d real and %d kwok nodes Ready, set-up %v", len(c.Nodes), len(c.KwokNodes), time.Since(begin).Round(time.Millisecond))
	return c
}

// binaries returns the directories of test/setup/kube.sh and node.sh.
func binaries(tb testing.TB) (control, node string) {
	control = os.Getenv("KUBEBUILDER_ASSETS")
	if control == "" {
		control = services.Setup(tb, "kube.sh")
	}
	node = os.Getenv("CARBONGATE_NODE_DIR")
	if node == "" {
		node = services.Setup(tb, "node.sh")
	}
	for _, p := range []string{filepath.Join(control, "kube-apiserver"), filepath.Join(control, "etcd"),
		filepath.Join(node, "bin", "kubelet"), filepath.Join(node, "bin", "containerd"), filepath.Join(node, "pause.oci.tar")} {
		if _, err := os.Stat(p); err != nil {
			tb.Fatalf("cluster: %v (KUBEBUILDER_ASSETS from test/setup/kube.sh, CARBONGATE_NODE_DIR from test/setup/node.sh)", err)
		}
	}
	return control, node
}

func nodeAddrs(n int) []string {
	addrs := []string{apiServerIP + "/32"}
	for i := 1; i < n; i++ {
		addrs = append(addrs, nodeIP(i)+"/32")
	}
	return addrs
}

// dir makes and returns a directory under StateDir.
func (c *Cluster) dir(parts ...string) string {
	d := filepath.Join(append([]string{StateDir}, parts...)...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		c.tb.Fatal(err)
	}
	return d
}

// writeFile writes a file under StateDir and returns its path.
func (c *Cluster) writeFile(name, content string) string {
	p := filepath.Join(StateDir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		c.tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		c.tb.Fatal(err)
	}
	return p
}

// Kubeconfig writes a kubeconfig for a new client-certificate identity
// user in groups and returns its path.
func (c *Cluster) UserKubeconfig(tb testing.TB, user string, groups ...string) string {
	tb.Helper()
	return c.pki.Kubeconfig(tb, c.Server, user, groups...)
}

// KubectlPath is the kubectl of the cluster's version (test/setup/node.sh).
func (c *Cluster) KubectlPath() string { return filepath.Join(c.bin, "bin", "kubectl") }

// Kubectl runs kubectl as cluster admin and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.KubectlPath(), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// waitReady waits until every node is Ready and the default namespace's
// ServiceAccount exists (pods are refused before).
func (c *Cluster) waitReady() {
	Eventually(c.tb, 3*time.Minute, "cluster: nodes Ready", func(ctx context.Context) error {
		for _, n := range append(append([]string{}, c.Nodes...), c.KwokNodes...) {
			node, err := c.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s not Ready", n)
			}
		}
		_, err := c.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Eventually retries f every 100 ms (each call with a 10 s deadline) until
// it returns nil, failing tb with its last error after timeout.
func Eventually(tb testing.TB, timeout time.Duration, what string, f func(ctx context.Context) error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drain deletes every namespace's Jobs and Pods while the kubelets still
// run, so that the CNI plugin removes each pod's veth and rules.
func (c *Cluster) drain() {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if out, err := c.Kubectl(ctx, "delete", "jobs,pods", "--all", "--all-namespaces", "--grace-period=1", "--wait=true", "--timeout=80s"); err != nil {
		c.logf("cluster: draining workloads: %v", err)
	} else {
		c.logf("cluster: workloads deleted in %v (%d lines)", time.Since(start).Round(time.Millisecond), strings.Count(out, "\n"))
	}
}

// restConfig loads a kubeconfig.
func restConfig(tb testing.TB, path string) *rest.Config {
	tb.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// ip parses a literal address.
func ip(s string) net.IP { return net.ParseIP(s) }
