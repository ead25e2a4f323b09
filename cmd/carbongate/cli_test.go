package main

import (
	"strings"
	"testing"

	"github.com/carbongate/carbongate/cmd/internal/cli/clitest"
)

// TestCLIConventions: help on stdout with exit 0, exit 2 for an unknown
// flag or a bad variable (package cli).
func TestCLIConventions(t *testing.T) {
	t.Parallel()
	clitest.Conventions(t, "carbongate", "CARBONGATE_MAX_CONNS=many")
}

// TestEnvFlags: every flag is read from its variable when not on the
// command line, the old names (CARBONGATE_REGISTRY_TOKEN,
// CARBONGATE_CASDK_PREFIX, CARBONGATE_CASDK_ROOT) included, and an empty
// CARBONGATE_CASDK_PREFIX still means no prefix. Not parallel: it sets the
// environment.
func TestEnvFlags(t *testing.T) {
	t.Setenv("CARBONGATE_REGISTRY_TOKEN", "tok")
	t.Setenv("CARBONGATE_CASDK_PREFIX", "")
	t.Setenv("CARBONGATE_CASDK_ROOT", "true")
	t.Setenv("CARBONGATE_MAX_CONNS", "7")
	t.Setenv("CARBONGATE_UPSTREAM_TIMEOUT", "3s")
	t.Setenv("CARBONGATE_ADDR", "127.0.0.1:0")
	m := NewMain()
	if err := m.ParseFlags([]string{"--upstream-timeout", "4s"}); err != nil {
		t.Fatal(err)
	}
	if m.Registry.Token != "tok" || m.CASDK.Prefix != "" || !m.CASDK.Root || m.MaxConns != 7 || m.Addr != "127.0.0.1:0" {
		t.Errorf("token %q, casdk prefix %q root %v, max conns %d, addr %s", m.Registry.Token, m.CASDK.Prefix, m.CASDK.Root, m.MaxConns, m.Addr)
	}
	if m.UpstreamTimeout.String() != "4s" {
		t.Errorf("--upstream-timeout %v: the command line must win over $CARBONGATE_UPSTREAM_TIMEOUT", m.UpstreamTimeout)
	}
	t.Setenv("CARBONGATE_CASDK_PREFIX", "/sdk")
	t.Setenv("CARBONGATE_MAX_CONNS", "0")
	m = NewMain()
	err := m.ParseFlags(nil)
	if m.CASDK.Prefix != "/sdk" || err == nil || !strings.Contains(err.Error(), "--max-conns must be at least 1") {
		t.Errorf("casdk prefix %q, %v", m.CASDK.Prefix, err)
	}
}
