package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/gateway/remote/remotetest"
)

// TestRoutes runs the binary's Main with --routes: DE is served by its
// remote model over gRPC, SE's remote model is down (generic answers), PL
// falls to the generic remote model.
func TestRoutes(t *testing.T) {
	t.Parallel()
	de := remotetest.ServeGRPC(t, remotetest.NewBackend("carbon-forecaster-DE", 24, 96, 100), "DE")
	seB := remotetest.NewBackend("carbon-forecaster-SE", 24, 96, 100)
	se := remotetest.ServeREST(t, seB, "SE")
	seB.SetMode(remotetest.Down)
	gen := remotetest.ServeREST(t, remotetest.NewBackend("carbon-forecaster-generic", 24, 96, 300), "")
	file := filepath.Join(t.TempDir(), "routes.yaml")
	yaml := fmt.Sprintf(`
- {zone: DE, protocol: grpc, url: %q, model: carbon-forecaster-DE}
- {zone: SE, protocol: rest, url: %q, model: carbon-forecaster-SE}
- {zone: generic, protocol: rest, url: %q, model: carbon-forecaster-generic}
`, de.Endpoint.URL, se.Endpoint.URL, gen.Endpoint.URL)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	// SE answers 503 at once: the upstream timeout only has to let the
	// healthy DE and generic models answer, also on a loaded machine (500 ms
	// was missed there).
	m, logs := startMain(t, "--routes", file, "--drain-delay", "0s", "--upstream-timeout", "5s", "--breaker-failures", "3", "--route-refresh", "1s")
	resp, err := http.Post(m.URL()+"/v1/schedule", "application/json", strings.NewReader(`{"zones":["DE","SE","PL"],"duration":"PT3H"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Provenance map[string]struct{ Model, Version, Source, Reason string } `json:"provenance"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	want := map[string][2]string{
		"DE": {"zone", "carbon-forecaster-DE"},
		"SE": {"generic", "carbon-forecaster-generic"},
		"PL": {"generic", "carbon-forecaster-generic"},
	}
	for z, w := range want {
		if p := r.Provenance[z]; p.Source != w[0] || p.Model != w[1] {
			t.Errorf("%s provenance=%+v, want %s %s", z, p, w[0], w[1])
		}
	}
	if p := r.Provenance["SE"]; !strings.Contains(p.Reason, "remote zone: unavailable: zone model carbon-forecaster-SE") {
		t.Errorf("SE reason=%q", p.Reason)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"remote models routed","endpoints":3`) {
		t.Errorf("no log of the routes:\n%s", logs)
	}
}

func TestBadRoutesFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(file, []byte("- {zone: DE, protocol: rest, model: m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	m.Stderr = io.Discard
	if err := m.ParseFlags([]string{"--addr", "127.0.0.1:0", "--routes", file}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "route 1 (zone DE): url is required") {
		t.Fatalf("err=%v, want the broken entry named", err)
	}
}
