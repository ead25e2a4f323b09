package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/test/services"
)

// kwokLabel marks the nodes kwok plays (and no others).
const kwokLabel = "carbongate.io/test-node"

// KwokToleration lets a pod onto a kwok node: they are tainted so that
// only the pods a test means for them (whose containers kwok only plays)
// go there.
var KwokToleration = corev1.Toleration{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}

var metavGet = metav1.GetOptions{}

// startKwok creates one fake node per region and starts kwok to play them
// with its fast stages (nodes Ready at once, a Job's pod Running then
// Succeeded). It returns the nodes' names.
func (c *Cluster) startKwok(regions []string) []string {
	var names []string
	for _, r := range regions {
		name := "carbongate-kwok-" + r
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{kwokLabel: "kwok", RegionLabel: r, "kubernetes.io/hostname": name,
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: KwokToleration.Key, Value: KwokToleration.Value, Effect: KwokToleration.Effect}}}}
		if _, err := c.Kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			c.tb.Fatalf("cluster: kwok node %s: %v", name, err)
		}
		names = append(names, name)
	}
	cfg := c.kwokConfig()
	services.StartBinary(c.tb, services.Binary{
		Name: "kwok", Path: filepath.Join(c.bin, "bin", "kwok"),
		Args: []string{"--kubeconfig=" + c.Kubeconfig, "--config=" + cfg},
		Ready: func(ctx context.Context) error {
			n, err := c.Kube.CoreV1().Nodes().Get(ctx, names[0], metavGet)
			if err != nil {
				return err
			}
			if !nodeReady(n) {
				return fmt.Errorf("kwok node %s not Ready yet", n.Name)
			}
			return nil
		},
	})
	return names
}

// kwokConfig writes kwok's configuration followed by the stages of its
// module that node.sh copied.
func (c *Cluster) kwokConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, `kind: KwokConfiguration
apiVersion: config.kwok.x-k8s.io/v1alpha1
options:
  cidr: %s
  nodeIP: %s
  manageAllNodes: false
  manageNodesWithLabelSelector: %s=kwok
  serverAddress: 127.0.0.1:%d
  nodeLeaseParallelism: 4
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  podsOnNodeSyncParallelism: 4
  nodeLeaseDurationSeconds: 40
`, kwokCIDR, kwokNodeIP, kwokLabel, services.FreePort(c.tb))
	stages, err := filepath.Glob(filepath.Join(c.bin, "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		c.tb.Fatalf("cluster: no kwok stages in %s (%v)", filepath.Join(c.bin, "kwok-stages"), err)
	}
	for _, s := range stages {
		y, err := os.ReadFile(s)
		if err != nil {
			c.tb.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return c.writeFile("kwok/kwok.yaml", b.String())
}
