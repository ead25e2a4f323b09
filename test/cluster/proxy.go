package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/carbongate/carbongate/test/services"
)

// startKubeProxy runs one kube-proxy (iptables mode) for the host: it
// makes ClusterIPs, among them the kubernetes Service the pods use to
// reach the API server, work on every real node (they share the host's
// network stack). It changes no conntrack sysctl, serves node ports on the
// nodes' bridge only and leaves route_localnet alone.
func (c *Cluster) startKubeProxy() {
	kc := c.pki.Kubeconfig(c.tb, c.Server, "system:kube-proxy")
	services.StartBinary(c.tb, services.Binary{
		Name: "kube-proxy", Path: filepath.Join(c.bin, "bin", "kube-proxy"),
		ArgsFor: func() []string {
			cfg := c.writeFile("kube-proxy.yaml", fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
nodePortAddresses: ["10.212.0.0/24"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, kc, podCIDR, c.Nodes[0], services.FreePort(c.tb), services.FreePort(c.tb)))
			return []string{"--config=" + cfg, "--v=1"}
		},
		Ready: func(ctx context.Context) error {
			out, err := runContext(ctx, "iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES")
			if err != nil {
				return err
			}
			if !strings.Contains(out, serviceIP) {
				return fmt.Errorf("no rule for the kubernetes Service %s yet", serviceIP)
			}
			return nil
		},
	})
}

// runContext runs a command under ctx and returns its combined output.
func runContext(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
