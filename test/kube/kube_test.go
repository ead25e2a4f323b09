//go:build interop

package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// replayStart is carbongate's replay clock at start; the admission
// fixtures' deadlines are relative to it.
const replayStart = "2021-06-01T00:00:00Z"

// TestKubernetes starts one control plane and runs every part against it:
// the admission webhook as carbongate and as OPA, and the KServe discovery
// side by side (each in its own namespaces), then the tests that register
// cluster-wide objects.
func TestKubernetes(t *testing.T) {
	c := startCluster(t)
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	t.Run("side-by-side", func(t *testing.T) {
		t.Run("Admission", func(t *testing.T) {
			t.Parallel()
			testAdmission(t, c, bin)
		})
		t.Run("AdmissionOPA", func(t *testing.T) {
			t.Parallel()
			testOPAAdmission(t, c, bin)
		})
		t.Run("KServe", func(t *testing.T) {
			t.Parallel()
			testKServe(t, c, bin)
		})
		t.Run("CASDKExporter", func(t *testing.T) { t.Parallel(); testCASDKExporter(t, c, bin) })
	})
	t.Run("Controller", func(t *testing.T) { testController(t, c, bin) })
	t.Run("WebhookManifest", func(t *testing.T) { testWebhookManifest(t, c, bin) })
	t.Run("HelmInstall", func(t *testing.T) { testHelmInstall(t, c) })
}

// gate is a running carbongate.
type gate struct {
	*services.Proc
	URL    string
	client *http.Client // trusts its serving certificate
}

// tlsFiles are a webhook's serving certificate (for 127.0.0.1) and the CA
// whose client certificates it accepts: the API server's.
type tlsFiles struct {
	serverCA                *services.CA
	cert, key, clientCAFile string
}

func newTLSFiles(t testing.TB, c *cluster) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca := services.NewCA(t, "carbongate-serving-ca")
	certPEM, keyPEM := ca.Issue(t, "carbongate", false, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	f := tlsFiles{serverCA: ca, cert: filepath.Join(dir, "tls.crt"), key: filepath.Join(dir, "tls.key"), clientCAFile: filepath.Join(dir, "client-ca.crt")}
	for p, b := range map[string][]byte{f.cert: certPEM, f.key: keyPEM, f.clientCAFile: c.webhook.PEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// client is an HTTP client that trusts the serving certificate and has no
// client certificate.
func (tf *tlsFiles) client() *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(tf.serverCA.Cert)
	return &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
}

// startGate runs carbongate from bin on the replay clock with args added;
// with tf it serves HTTPS and its webhook route wants the API server's
// client certificate.
func startGate(t testing.TB, bin string, tf *tlsFiles, args ...string) *gate {
	t.Helper()
	g := &gate{client: &http.Client{Timeout: 10 * time.Second}}
	scheme := "http"
	if tf != nil {
		scheme = "https"
		g.client = tf.client()
		args = append(args, "--tls-cert", tf.cert, "--tls-key", tf.key, "--admission-client-ca", tf.clientCAFile)
	}
	g.Proc = services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"),
		ArgsFor: func() []string {
			port := services.FreePort(t)
			g.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
			return append([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--clock", "replay",
				"--replay-start", replayStart, "--drain-delay", "0s", "--access-log=false"}, args...)
		},
		Ready: func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/readyz", nil)
			if err != nil {
				return err
			}
			resp, err := g.client.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET /readyz: %d", resp.StatusCode)
			}
			return nil
		},
	})
	return g
}
