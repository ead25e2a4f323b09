package services

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a test cluster's certificate authority and the files it issued,
// under Dir.
type PKI struct {
	CA  *CA
	Dir string
}

// NewPKI makes a CA named name and writes it (ca.crt, ca.key) to dir.
func NewPKI(tb testing.TB, name, dir string) *PKI {
	tb.Helper()
	p := &PKI{CA: NewCA(tb, name), Dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	p.Write(tb, "ca.crt", p.CA.PEM)
	p.WriteKey(tb, "ca.key", p.CA.Key)
	return p
}

// Path is the path of the file name under Dir.
func (p *PKI) Path(name string) string { return filepath.Join(p.Dir, name) }

// Write writes b to the file name under Dir and returns its path.
func (p *PKI) Write(tb testing.TB, name string, b []byte) string {
	tb.Helper()
	if err := os.WriteFile(p.Path(name), b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p.Path(name)
}

// WriteKey writes key as PKCS #8 PEM to the file name under Dir and returns
// its path.
func (p *PKI) WriteKey(tb testing.TB, name string, key *ecdsa.PrivateKey) string {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return p.Write(tb, name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// Issue writes NAME.crt and NAME.key: a certificate for cn in the groups
// orgs, for client use, and for server use at ips and dnsNames when either
// is given.
func (p *PKI) Issue(tb testing.TB, name, cn string, orgs []string, ips []net.IP, dnsNames ...string) (cert, key string) {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatal(err)
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(ips)+len(dnsNames) > 0 {
		usage = append(usage, x509.ExtKeyUsageServerAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage, IPAddresses: ips, DNSNames: dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA.Cert, &k.PublicKey, p.CA.Key)
	if err != nil {
		tb.Fatal(err)
	}
	return p.Write(tb, name+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), p.WriteKey(tb, name+".key", k)
}

// Kubeconfig issues a client certificate for user in groups and writes a
// kubeconfig of it for the API server at server; it returns its path.
func (p *PKI) Kubeconfig(tb testing.TB, server, user string, groups ...string) string {
	tb.Helper()
	cert, key := p.Issue(tb, "user-"+user, user, groups, nil)
	return p.Write(tb, user+".kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: carbongate-test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %q
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: carbongate-test
  context: {cluster: carbongate-test, user: %q}
current-context: carbongate-test
`, server, p.Path("ca.crt"), user, cert, key, user)))
}

// ServiceAccountKey writes the service accounts' signing key, sa.key (and
// its public half beside it, sa.key.pub), and returns its path.
func (p *PKI) ServiceAccountKey(tb testing.TB) string {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	p.Write(tb, "sa.key.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	return p.WriteKey(tb, "sa.key", k)
}

// WebhookClient makes an API server present a client certificate to every
// admission webhook (user "*"): it makes a CA, issues the certificate and
// writes the admission configuration for --admission-control-config-file
// into dir; it returns the CA, which webhooks trust, and the
// configuration's path.
func WebhookClient(tb testing.TB, dir string) (*CA, string) {
	tb.Helper()
	p := &PKI{Dir: dir}
	ca := NewCA(tb, "apiserver-webhook-client-ca")
	certPEM, keyPEM := ca.Issue(tb, "kube-apiserver", true, time.Now().Add(-time.Hour), time.Now().Add(48*time.Hour))
	cert, key := p.Write(tb, "webhook-client.crt", certPEM), p.Write(tb, "webhook-client.key", keyPEM)
	kc := p.Write(tb, "webhook-kubeconfig.yaml", fmt.Appendf(nil, `apiVersion: v1
kind: Config
users:
- name: "*"
  user: {client-certificate: %q, client-key: %q}
`, cert, key))
	return ca, p.Write(tb, "admission.yaml", fmt.Appendf(nil, `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %q
`, kc))
}
