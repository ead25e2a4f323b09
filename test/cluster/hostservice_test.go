//go:build interop

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hostService makes target, a server on the host's loopback (the test
// services listen there only), reachable from the pods as Service name in
// namespace ns on port, the way a cluster reaches a database outside it: a
// Service without a selector whose EndpointSlice names the host's address
// on the nodes' bridge (apiServerIP, where the pods already reach the API
// server), on which a forwarder of the test relays each connection to
// target until cleanup. It waits until the host reaches target through the
// Service's ClusterIP (kube-proxy has its rules) and returns the in-cluster
// address, name.ns.svc:port.
func hostService(t testing.TB, c *Cluster, ns, name string, port int32, target string) string {
	t.Helper()
	fwd := forwardFromNodes(t, target)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: name, Port: port, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromInt32(fwd)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-host", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "test.carbongate.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{apiServerIP}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: new(name), Port: new(fwd), Protocol: new(corev1.ProtocolTCP)}},
	}
	if _, err := c.Kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	via := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port)))
	Eventually(t, time.Minute, "host reaches "+target+" through Service "+name, func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", via)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	return fmt.Sprintf("%s.%s.svc:%d", name, ns, port)
}

// forwardFromNodes listens on apiServerIP and relays every connection to
// target (host:port) until cleanup, which closes the listener and the
// open connections. It returns the port it listens on.
func forwardFromNodes(t testing.TB, target string) int32 {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(apiServerIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{target: target, open: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve(l)
	t.Cleanup(func() {
		l.Close()
		f.mu.Lock()
		f.closed = true
		for conn := range f.open {
			conn.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// forwarder relays the connections a listener accepts to target.
type forwarder struct {
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]struct{} // under mu
	closed bool                  // under mu: no new connection is tracked
}

// serve accepts until the listener is closed.
func (f *forwarder) serve(l net.Listener) {
	defer f.wg.Done()
	for {
		in, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		} else if err != nil {
			continue
		}
		f.wg.Add(1)
		go f.relay(in)
	}
}

// relay copies between in and a new connection to target, both ways,
// and closes both when either side ends.
func (f *forwarder) relay(in net.Conn) {
	defer f.wg.Done()
	out, err := net.DialTimeout("tcp", f.target, 10*time.Second)
	if err != nil {
		in.Close()
		return
	}
	if !f.track(in, out) {
		return
	}
	done := make(chan struct{}, 2)
	for _, p := range [][2]net.Conn{{in, out}, {out, in}} {
		go func() {
			_, _ = io.Copy(p[0], p[1])
			done <- struct{}{}
		}()
	}
	<-done
	in.Close()
	out.Close()
	<-done
	f.mu.Lock()
	delete(f.open, in)
	delete(f.open, out)
	f.mu.Unlock()
}

// track records conns as open, or closes them when cleanup has begun.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, conn := range conns {
		if f.closed {
			conn.Close()
			continue
		}
		f.open[conn] = struct{}{}
	}
	return !f.closed
}
