package federation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/carbongate/carbongate/test/services"
)

// aggregatedAPIServerHost is the Service name Karmada's API server checks
// the aggregated API server's certificate against.
const aggregatedAPIServerHost = "karmada-aggregated-apiserver.karmada-system.svc"

// startAPIServer starts an etcd and a kube-apiserver named name, with a
// CA of its own, an admin client certificate and an admin token. Karmada's
// (front) also trusts the front proxy's client certificate, for its
// aggregated API server.
func (f *Federation) startAPIServer(name string, front bool) *APIServer {
	tb := f.tb
	pki := services.NewPKI(tb, name+"-ca", f.path(name, "pki"))
	cert, key := pki.Issue(tb, "serving", "127.0.0.1", nil, []net.IP{net.ParseIP("127.0.0.1")}, "localhost", aggregatedAPIServerHost)
	s := &APIServer{PKI: pki, Token: randomToken(tb)}
	tokens := pki.Write(tb, "tokens.csv", []byte(s.Token+",carbongate-test-admin,carbongate-test-admin,system:masters\n"))
	sa := pki.ServiceAccountKey(tb)
	s.etcd = services.StartEtcd(tb, f.bins.kube, f.path(name, "etcd"))
	var extra []string
	if front {
		var admission string
		s.WebhookCA, admission = services.WebhookClient(tb, pki.Dir)
		extra = append(f.frontProxyArgs(name), "--admission-control-config-file="+admission)
	}
	services.StartBinary(tb, services.Binary{
		Name: "kube-apiserver-" + name, Path: filepath.Join(f.bins.kube, "kube-apiserver"),
		ArgsFor: func() []string {
			s.URL = fmt.Sprintf("https://127.0.0.1:%d", services.FreePort(tb))
			return append([]string{
				"--etcd-servers=" + s.etcd, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
				"--secure-port=" + s.URL[len("https://127.0.0.1:"):], "--cert-dir=" + f.path(name, "apiserver"),
				"--tls-cert-file=" + cert, "--tls-private-key-file=" + key,
				"--client-ca-file=" + pki.Path("ca.crt"), "--token-auth-file=" + tokens, "--authorization-mode=RBAC",
				"--service-account-issuer=https://kubernetes.default.svc",
				"--service-account-key-file=" + sa + ".pub", "--service-account-signing-key-file=" + sa,
				"--service-cluster-ip-range=10.96.0.0/16", "--disable-admission-plugins=ServiceAccount",
				"--endpoint-reconciler-type=none", "--profiling=false",
			}, extra...)
		},
		Ready:   func(ctx context.Context) error { return services.TLSReady(s.URL+"/readyz", pki.CA.Cert)(ctx) },
		Timeout: 3 * time.Minute,
	})
	s.Kubeconfig = pki.Kubeconfig(tb, s.URL, "carbongate-test-admin", "system:masters")
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	s.Config = cfg
	if s.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		tb.Fatal(err)
	}
	if s.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		tb.Fatal(err)
	}
	return s
}

// frontProxyArgs are the flags that let Karmada's API server proxy to its
// aggregated API server: a client certificate of a CA of its own, which the
// aggregated API server trusts for the X-Remote-* headers.
func (f *Federation) frontProxyArgs(name string) []string {
	tb := f.tb
	fp := services.NewPKI(tb, name+"-front-proxy-ca", f.path(name, "front-proxy"))
	cert, key := fp.Issue(tb, "front-proxy-client", "front-proxy-client", nil, nil)
	return []string{
		"--requestheader-client-ca-file=" + fp.Path("ca.crt"), "--requestheader-allowed-names=front-proxy-client",
		"--proxy-client-cert-file=" + cert, "--proxy-client-key-file=" + key,
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
	}
}

func randomToken(tb testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}
