package cluster

import (
	"fmt"
	"net"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/carbongate/carbongate/test/services"
)

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler, and makes c's admin clients.
func (c *Cluster) startControlPlane() {
	tb := c.tb
	c.pki = services.NewPKI(tb, "carbongate-test-cluster-ca", c.dir("pki"))
	etcd := services.StartEtcd(tb, c.control, c.dir("etcd"))
	port := services.FreePort(tb)
	c.Server = fmt.Sprintf("https://%s:%d", apiServerIP, port)
	args := c.apiServerArgs(etcd, port)
	services.StartBinary(tb, services.Binary{
		Name: "kube-apiserver", Path: filepath.Join(c.control, "kube-apiserver"), Args: args,
		Ready: services.TLSReady(c.Server+"/readyz", c.pki.CA.Cert), Timeout: 3 * time.Minute,
	})
	c.Kubeconfig = c.pki.Kubeconfig(tb, c.Server, "carbongate-test-admin", "system:masters")
	c.Config = restConfig(tb, c.Kubeconfig)
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		tb.Fatal(err)
	}
	c.Kube = kube
	c.startControllerManager()
	c.startScheduler()
}

func (c *Cluster) apiServerArgs(etcd string, port int) []string {
	tb, p := c.tb, c.pki
	cert, key := p.Issue(tb, "apiserver", "kube-apiserver", nil,
		[]net.IP{ip(apiServerIP), ip(serviceIP), ip("127.0.0.1")},
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	kcert, kkey := p.Issue(tb, "apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil)
	saKey := c.pki.ServiceAccountKey(tb)
	webhookCA, admission := services.WebhookClient(tb, p.Dir)
	c.WebhookCA = webhookCA
	return []string{
		"--etcd-servers=" + etcd,
		"--bind-address=" + apiServerIP, "--advertise-address=" + apiServerIP, fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + c.dir("apiserver"), "--tls-cert-file=" + cert, "--tls-private-key-file=" + key,
		"--client-ca-file=" + p.Path("ca.crt"),
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey + ".pub", "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kubelet-client-certificate=" + kcert, "--kubelet-client-key=" + kkey,
		"--kubelet-preferred-address-types=InternalIP",
		"--admission-control-config-file=" + admission,
		"--allow-privileged=true", "--profiling=false",
	}
}

func (c *Cluster) startControllerManager() {
	kc := c.pki.Kubeconfig(c.tb, c.Server, "system:kube-controller-manager")
	certs := c.dir("controller-manager")
	services.StartBinary(c.tb, services.Binary{
		Name: "kube-controller-manager", Path: filepath.Join(c.bin, "bin", "kube-controller-manager"),
		ArgsFor: func() []string {
			return []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
				"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", services.FreePort(c.tb)), "--cert-dir=" + certs,
				"--leader-elect=false", "--use-service-account-credentials=true", "--profiling=false",
				// Each controller's own API rate limit (default 20/s, 30 in a burst)
				// paces a wave of released Jobs: 200 at once took 10 s at p50 from
				// release to pod Running, the Job controller waiting on its limiter.
				"--kube-api-qps=100", "--kube-api-burst=200",
				"--service-account-private-key-file=" + c.pki.Path("sa.key"), "--root-ca-file=" + c.pki.Path("ca.crt"),
				"--cluster-signing-cert-file=" + c.pki.Path("ca.crt"), "--cluster-signing-key-file=" + c.pki.Path("ca.key")}
		},
		Ready: services.Settled("kube-controller-manager"),
	})
}

func (c *Cluster) startScheduler() {
	kc := c.pki.Kubeconfig(c.tb, c.Server, "system:kube-scheduler")
	services.StartBinary(c.tb, services.Binary{
		Name: "kube-scheduler", Path: filepath.Join(c.bin, "bin", "kube-scheduler"),
		ArgsFor: func() []string {
			return []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
				"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", services.FreePort(c.tb)),
				"--leader-elect=false", "--profiling=false",
				// Its API rate limit (default 50/s, 100 in a burst) paces the
				// bindings of a released wave as the controller-manager's did
				// its pods (flags, as no --config file is given).
				"--kube-api-qps=100", "--kube-api-burst=200"}
		},
		Ready: services.Settled("kube-scheduler"),
	})
}
