package services

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
)

// StartEtcd starts the etcd in dir (test/setup/kube.sh's) with its data in
// data, without fsync, on fresh loopback ports, and returns its client URL
// once /health answers 200. It is killed at cleanup.
func StartEtcd(tb testing.TB, dir, data string) string {
	tb.Helper()
	var url string
	StartBinary(tb, Binary{
		Name: "etcd", Path: filepath.Join(dir, "etcd"),
		ArgsFor: func() []string {
			client, peer := FreePort(tb), FreePort(tb)
			url = fmt.Sprintf("http://127.0.0.1:%d", client)
			peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
			return []string{"--name", "carbongate-test", "--data-dir", data,
				"--listen-client-urls", url, "--advertise-client-urls", url,
				"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
				"--initial-cluster", "carbongate-test=" + peerURL, "--unsafe-no-fsync", "--log-level", "warn"}
		},
		Ready: func(ctx context.Context) error { return HTTPReady(url + "/health")(ctx) },
	})
	return url
}

// TLSReady returns a readiness check that wants 200 from url over TLS
// verified with the CA ca.
func TLSReady(url string, ca *x509.Certificate) func(context.Context) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	return func(ctx context.Context) error { return GetOK(ctx, client, url) }
}

// GetOK wants 200 from a GET of url with client.
func GetOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return nil
}
