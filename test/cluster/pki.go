package cluster

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

	"github.com/carbongate/carbongate/test/services"
)

// pki is the cluster's certificate authority and the files it issued, under
// dir.
type pki struct {
	ca  *services.CA
	dir string
}

func newPKI(tb testing.TB, dir string) *pki {
	tb.Helper()
	p := &pki{ca: services.NewCA(tb, "carbongate-test-cluster-ca"), dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	p.write(tb, "ca.crt", p.ca.PEM)
	p.writeKey(tb, "ca.key", p.ca.Key)
	return p
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p *pki) write(tb testing.TB, name string, b []byte) string {
	tb.Helper()
	if err := os.WriteFile(p.path(name), b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p.path(name)
}

func (p *pki) writeKey(tb testing.TB, name string, key *ecdsa.PrivateKey) string {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return p.write(tb, name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// issue writes NAME.crt and NAME.key: a certificate for cn in the groups
// orgs, for client use, and for server use at ips and dnsNames when either
// is given.
func (p *pki) issue(tb testing.TB, name, cn string, orgs []string, ips []net.IP, dnsNames ...string) (cert, key string) {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca.Cert, &k.PublicKey, p.ca.Key)
	if err != nil {
		tb.Fatal(err)
	}
	return p.write(tb, name+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), p.writeKey(tb, name+".key", k)
}

// kubeconfig issues a client certificate for user in groups and writes a
// kubeconfig of it for the API server at server; it returns its path.
func (p *pki) kubeconfig(tb testing.TB, server, user string, groups ...string) string {
	tb.Helper()
	cert, key := p.issue(tb, "user-"+user, user, groups, nil)
	return p.write(tb, user+".kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
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
`, server, p.path("ca.crt"), user, cert, key, user)))
}
