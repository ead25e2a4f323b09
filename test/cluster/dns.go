package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/carbongate/carbongate/test/services"
)

// The cluster's DNS, as a real cluster has it: the kube-dns Service in
// kube-system at a fixed ClusterIP, which every kubelet gives its pods as
// their nameserver (clusterDNS), in front of CoreDNS with its kubernetes
// plugin. CoreDNS runs on the host, not as a pod (no image to pull), and
// listens on node 0's IP at a free port; the Service's EndpointSlice,
// written here rather than by the EndpointSlice controller (the Service
// has no selector), points at that address, and kube-proxy forwards port
// 53 there. So nothing of the cluster binds port 53 on the host.
const (
	dnsDomain    = "cluster.local" // the kubelets' clusterDomain
	dnsServiceIP = "10.214.0.10"   // the kubelets' clusterDNS
	dnsService   = "kube-dns"
	dnsNamespace = "kube-system"
	dnsUser      = "system:coredns"
	dnsManagedBy = "carbongate-test-cluster"
	// dnsProbe is the name the cluster's start resolves through the
	// kube-dns Service.
	dnsProbe = "kubernetes.default.svc." + dnsDomain
)

// startDNS starts CoreDNS (test/setup/coredns.sh) as user system:coredns,
// allowed what CoreDNS's own manifests allow it (list and watch Services,
// EndpointSlices and Namespaces), and creates the kube-dns Service and
// its EndpointSlice.
func (c *Cluster) startDNS() {
	ctx, start := context.Background(), time.Now()
	c.dnsRBAC(ctx)
	kubeconfig := c.pki.Kubeconfig(c.tb, c.Server, dnsUser)
	var port, readyPort int
	services.StartBinary(c.tb, services.Binary{
		Name: "coredns", Path: c.coredns,
		ArgsFor: func() []string {
			port, readyPort = services.FreePort(c.tb), services.FreePort(c.tb)
			return []string{"-conf", c.writeFile("coredns/Corefile", corefile(nodeIP(0), port, readyPort, kubeconfig))}
		},
		// Ready once the kubernetes plugin has synced with the API server.
		Ready: func(ctx context.Context) error {
			return services.HTTPReady(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort))(ctx)
		},
	})
	c.dnsService(ctx, port)
	c.logf("cluster: CoreDNS ready, kube-dns Service at %s in %v", dnsServiceIP, time.Since(start).Round(time.Millisecond))
}

// corefile serves the cluster's domain and the reverse zones from the
// API server at addr:port, every other name from the host's resolver:
// kubeadm's Corefile without the plugins the tests do not use (health,
// prometheus, loop, reload, loadbalance).
func corefile(addr string, port, readyPort int, kubeconfig string) string {
	return fmt.Sprintf(`.:%d {
    bind %s
    errors
    ready 127.0.0.1:%d
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30
}
`, port, addr, readyPort, dnsDomain, kubeconfig)
}

// dnsRBAC lets dnsUser read what the kubernetes plugin watches.
func (c *Cluster) dnsRBAC(ctx context.Context) {
	rbac := c.Kube.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: dnsUser}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services", "namespaces"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		c.tb.Fatalf("cluster: DNS: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: dnsUser},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsUser},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: dnsUser}}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		c.tb.Fatalf("cluster: DNS: %v", err)
	}
}

// dnsService creates the kube-dns Service at dnsServiceIP, port 53 (UDP
// and TCP), and its EndpointSlice: CoreDNS at node 0's IP and port.
func (c *Cluster) dnsService(ctx context.Context, port int) {
	// The API server creates kube-system just after it is ready.
	Eventually(c.tb, time.Minute, "cluster: namespace "+dnsNamespace, func(ctx context.Context) error {
		_, err := c.Kube.CoreV1().Namespaces().Get(ctx, dnsNamespace, metav1.GetOptions{})
		return err
	})
	labels := map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
	ports := []corev1.ServicePort{
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt(port)},
		{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt(port)},
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: dnsService, Namespace: dnsNamespace, Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: dnsServiceIP, Ports: ports}}
	if _, err := c.Kube.CoreV1().Services(dnsNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		c.tb.Fatalf("cluster: DNS: %v", err)
	}
	ready := true
	p := int32(port)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: dnsService + "-host", Namespace: dnsNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: dnsService, discoveryv1.LabelManagedBy: dnsManagedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{nodeIP(0)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
	for _, sp := range ports {
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: &sp.Name, Protocol: &sp.Protocol, Port: &p})
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(dnsNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		c.tb.Fatalf("cluster: DNS: %v", err)
	}
}

// waitDNS waits until the host, asking the kube-dns Service as a pod
// does, gets the kubernetes Service's ClusterIP for its name: CoreDNS
// serves, and kube-proxy forwards the Service's port.
func (c *Cluster) waitDNS() {
	start := time.Now()
	r := dnsResolver()
	Eventually(c.tb, time.Minute, "cluster: "+dnsProbe+" through the kube-dns Service", func(ctx context.Context) error {
		addrs, err := r.LookupHost(ctx, dnsProbe)
		if err != nil {
			return err
		}
		if !slices.Equal(addrs, []string{serviceIP}) {
			return fmt.Errorf("%s is %v, want %s", dnsProbe, addrs, serviceIP)
		}
		return nil
	})
	c.logf("cluster: DNS answers through the kube-dns Service %v after the nodes", time.Since(start).Round(time.Millisecond))
}

// dnsResolver asks the cluster's DNS through the kube-dns Service (which
// the host reaches through kube-proxy's rules), as a pod's resolver does.
func dnsResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(dnsServiceIP, "53"))
	}}
}
