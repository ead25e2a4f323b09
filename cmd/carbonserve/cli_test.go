package main

import (
	"testing"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli/clitest"
)

// TestCLIConventions: help on stdout with exit 0, exit 2 for an unknown
// flag or a bad variable (package cli).
func TestCLIConventions(t *testing.T) {
	t.Parallel()
	clitest.Conventions(t, "carbonserve", "CARBONGATE_GRPC_PORT=eighty")
}

// TestEnvFlags: flags are read from their variables (KServe's underscore
// names too) when not on the command line; $PORT stays below them.
func TestEnvFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CARBONGATE_MODEL_DIR": "/mnt/m", "CARBONGATE_HTTP_PORT": "9001", "PORT": "9002",
		"CARBONGATE_FETCH_TIMEOUT": "5s", "CARBONGATE_S3_REGION": "eu-north-1", "CARBONGATE_GRPC_PORT": "9003"}
	m := NewMain()
	m.Getenv = func(k string) string { return env[k] }
	if err := m.ParseFlags([]string{"--grpc_port", "9004"}); err != nil {
		t.Fatal(err)
	}
	if m.ModelDir != "/mnt/m" || m.HTTPPort != 9001 || m.FetchTimeout != 5*time.Second || m.S3.Region != "eu-north-1" || m.GRPCPort != 9004 {
		t.Errorf("model dir %q, http port %d, fetch timeout %v, region %q, grpc port %d", m.ModelDir, m.HTTPPort, m.FetchTimeout, m.S3.Region, m.GRPCPort)
	}
}
