package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// RegionLabel is the node label carrying a node's region.
const RegionLabel = "topology.kubernetes.io/region"

// startNode starts real node i in region: its containerd (with images
// imported) and its kubelet. It returns the node's name.
func (c *Cluster) startNode(i int, region string, images []string) string {
	name := fmt.Sprintf("%s%c", namePrefix, 'a'+i)
	dir := c.dir(name)
	if err := makeCgroupRoot(name); err != nil {
		c.tb.Fatalf("cluster: cgroup root of %s: %v", name, err)
	}
	c.writeFile(name+"/net.d/10-"+name+".conflist", cniConfig(name, fmt.Sprintf("%s%d", cniPrefix, i), nodeSubnet(i), filepath.Join(dir, "cni-ipam")))
	sock := c.startContainerd(name, dir)
	for _, img := range images {
		c.importImage(sock, img)
	}
	kubeconfig := c.pki.Kubeconfig(c.tb, c.Server, "system:node:"+name, "system:nodes")
	services.StartBinary(c.tb, services.Binary{
		Name: "kubelet-" + name, Path: filepath.Join(c.bin, "bin", "kubelet"),
		ArgsFor: func() []string {
			cfg := c.writeFile(name+"/kubelet.yaml", kubeletConfig(name, i, dir, sock, c.pki.Path("ca.crt"), services.FreePort(c.tb), services.FreePort(c.tb)))
			return []string{"--config=" + cfg, "--kubeconfig=" + kubeconfig, "--root-dir=" + filepath.Join(dir, "kubelet"),
				"--cert-dir=" + filepath.Join(dir, "kubelet-pki"), "--hostname-override=" + name, "--node-ip=" + nodeIP(i),
				"--node-labels=" + RegionLabel + "=" + region, "--v=1"}
		},
		Ready: func(ctx context.Context) error {
			_, err := c.Kube.CoreV1().Nodes().Get(ctx, name, metavGet)
			return err
		},
		Timeout: 3 * time.Minute,
	})
	return name
}

// startContainerd starts node name's containerd with its state in dir and
// returns its socket.
func (c *Cluster) startContainerd(name, dir string) string {
	sock := filepath.Join(dir, "containerd", "containerd.sock")
	cfg := c.writeFile(name+"/containerd.toml", containerdConfig(filepath.Join(dir, "containerd"), filepath.Join(dir, "net.d"), c.PauseImage))
	services.StartBinary(c.tb, services.Binary{
		Name: "containerd-" + name, Path: filepath.Join(c.bin, "bin", "containerd"),
		Args: []string{"--config", cfg},
		Env:  []string{"PATH=" + filepath.Join(c.bin, "bin") + ":" + os.Getenv("PATH")},
		Ready: func(ctx context.Context) error {
			_, err := c.ctr(ctx, sock, "version")
			return err
		},
	})
	return sock
}

// importImage imports an OCI archive into the k8s.io namespace of the
// containerd at sock.
func (c *Cluster) importImage(sock, archive string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := c.ctr(ctx, sock, "-n", "k8s.io", "images", "import", archive); err != nil {
		c.tb.Fatalf("cluster: importing %s: %v", archive, err)
	}
}

func (c *Cluster) ctr(ctx context.Context, sock string, args ...string) (string, error) {
	return runContext(ctx, filepath.Join(c.bin, "bin", "ctr"), append([]string{"--address", sock}, args...)...)
}

func (c *Cluster) readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		c.tb.Fatal(err)
	}
	return string(b)
}

// containerdConfig is a containerd 2 configuration with every path under
// dir. The machine's root lacks CAP_SYS_RESOURCE: without
// restrict_oom_score_adj every sandbox fails in runc ("can't get final
// child's PID from pipe").
func containerdConfig(dir, cniConf, pause string) string {
	return fmt.Sprintf(`version = 3
root = "%[1]s/root"
state = "%[1]s/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs", "io.containerd.snapshotter.v1.btrfs"]

[grpc]
  address = "%[1]s/containerd.sock"

[ttrpc]
  address = "%[1]s/containerd.sock.ttrpc"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "%[1]s/opt"
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "%[3]s"
  [plugins."io.containerd.cri.v1.runtime"]
    enable_selinux = false
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "/usr/sbin/runc"
          Root = "%[1]s/runc"
          SystemdCgroup = false
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "%[2]s"
      max_conf_num = 1
`, dir, cniConf, pause)
}

// cniConfig is a bridge network named name on bridge with its own IPAM
// state directory.
func cniConfig(name, bridge, subnet, ipamDir string) string {
	gw := strings.TrimSuffix(subnet, "0/24") + "1"
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
`, name, bridge, ipamDir, subnet, gw)
}

// kubeletConfig is node name's KubeletConfiguration: cgroupfs under its
// own root, its own ports, logs and plugin directories; the pods' DNS is
// the kube-dns Service (dns.go); it leaves iptables to kube-proxy.
func kubeletConfig(name string, i int, dir, sock, ca string, port, healthz int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /%s
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: unix://%s
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
clusterDomain: %s
clusterDNS: [%s]
resolvConf: /etc/resolv.conf
podLogsDir: %s/pod-logs
volumePluginDir: %s/volume-plugins
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
`, nodeIP(i), port, healthz, ca, name, sock, dnsDomain, dnsServiceIP, dir, dir)
}
