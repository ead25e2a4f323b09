package services

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// OPADecision is the policy's complete AdmissionReview answer: OPA serves
// it at POST / as its default decision (the Helm chart's configuration).
const OPADecision = "/carbongate/admission/main"

// OPAStoreFlag makes OPA keep the bundle's data as Rego values: a decision
// then reads its origin's candidates without converting them from JSON
// first (about a tenth fewer allocations per review). The chart sets it.
const OPAStoreFlag = "--optimize-store-for-read-speed"

// opaGOGC is the Go GC target of a test OPA server: an evaluation
// allocates about 100 KiB, so the default (100) spends a large share of
// the CPU collecting at 2,000 reviews/s; 400 trades some memory for it.
const opaGOGC = "400"

// OPABinary returns $CARBONGATE_OPA, or builds the pinned OPA with
// test/setup/opa.sh.
func OPABinary(tb testing.TB) string {
	tb.Helper()
	return Tool(tb, "CARBONGATE_OPA", "opa.sh")
}

// RunOPA runs the opa CLI in the repository root and returns its stdout;
// the test fails when it exits non-zero.
func RunOPA(tb testing.TB, opa string, args ...string) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opa, args...)
	cmd.Dir = RepoRoot(tb)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("opa %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// BuildOPABundle builds deploy/opa (without its tests) into a bundle
// archive in a temp dir and returns its path.
func BuildOPABundle(tb testing.TB, opa string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "bundle.tar.gz")
	RunOPA(tb, opa, "build", "--bundle", "deploy/opa", "--ignore", "*_test.rego", "--output", out)
	return out
}

// OPAConfig is what StartOPA runs `opa run --server` with: the bundle and
// the policy's settings (OPA's environment, deploy/opa/README.md
// "Settings").
type OPAConfig struct {
	Bundle       string        // bundle archive (BuildOPABundle)
	Carbongate   string        // CARBONGATE_URL
	Timeout      time.Duration // CARBONGATE_TIMEOUT; 0 keeps the bundle's default
	FailOpen     bool          // CARBONGATE_FAIL_OPEN
	CacheSeconds int           // CARBONGATE_CACHE_SECONDS (0: every review asks carbongate)

	// CertFile and KeyFile, when set, make OPA serve HTTPS
	// (--tls-cert-file, --tls-private-key-file), as in the Helm chart; with
	// ClientCAFile it also refuses, in the TLS handshake, every client
	// without a certificate signed by that CA (--authentication=tls
	// --tls-ca-cert-file). Readiness is then checked on a plain-HTTP
	// diagnostic address (--diagnostic-addr, /health only; its scheme
	// written out, since OPA serves an address without one over HTTPS once
	// it has a certificate).
	CertFile, KeyFile, ClientCAFile string
}

// OPA is a running OPA server.
type OPA struct {
	*Proc
	URL string // http(s)://127.0.0.1:PORT, the API (POST / is OPADecision)
}

// StartOPA runs `opa run --server` on a free loopback port with c.Bundle,
// the policy's settings in its environment and OPADecision as the default
// decision, waits until it is healthy and kills it at cleanup.
func StartOPA(tb testing.TB, opa string, c OPAConfig) *OPA {
	tb.Helper()
	o := &OPA{}
	var health string
	env := []string{
		"GOGC=" + opaGOGC,
		"CARBONGATE_URL=" + c.Carbongate,
		"CARBONGATE_FAIL_OPEN=" + strconv.FormatBool(c.FailOpen),
		"CARBONGATE_CACHE_SECONDS=" + strconv.Itoa(c.CacheSeconds),
	}
	if c.Timeout > 0 {
		env = append(env, "CARBONGATE_TIMEOUT="+c.Timeout.String())
	}
	o.Proc = StartBinary(tb, Binary{
		Name: "opa", Path: opa,
		ArgsFor: func() []string {
			port := FreePort(tb)
			scheme := "http"
			args := []string{"run", "--server", "--addr", fmt.Sprintf("127.0.0.1:%d", port),
				"--disable-telemetry", "--log-level", "error", OPAStoreFlag,
				"--set", "default_decision=" + OPADecision}
			health = fmt.Sprintf("http://127.0.0.1:%d/health", port)
			if c.CertFile != "" {
				scheme = "https"
				diag := FreePort(tb)
				health = fmt.Sprintf("http://127.0.0.1:%d/health", diag)
				args = append(args, "--tls-cert-file", c.CertFile, "--tls-private-key-file", c.KeyFile,
					"--diagnostic-addr", fmt.Sprintf("http://127.0.0.1:%d", diag))
				if c.ClientCAFile != "" {
					args = append(args, "--authentication=tls", "--tls-ca-cert-file", c.ClientCAFile)
				}
			}
			o.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
			return append(args, "--bundle", c.Bundle)
		},
		Env:   env,
		Ready: func(ctx context.Context) error { return HTTPReady(health + "?bundles=true")(ctx) },
	})
	return o
}
