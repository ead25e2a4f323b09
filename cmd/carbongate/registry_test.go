package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models/serve/servetest"
)

// mlflowCall posts (or GETs, with body nil) to carbongate's MLflow API and
// returns the status and body.
func mlflowCall(t *testing.T, base, method, path, token string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+"/api/2.0/mlflow/"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// deVersion polls /v1/schedule until DE's provenance shows version want.
func deVersion(t *testing.T, base, want string, within time.Duration) time.Duration {
	t.Helper()
	t0 := time.Now()
	for {
		resp, err := http.Post(base+"/v1/schedule", "application/json", strings.NewReader(`{"zones":["DE","SE"],"duration":"PT3H"}`))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Provenance map[string]struct{ Model, Version, Source string } `json:"provenance"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("schedule: status %d, %v", resp.StatusCode, err)
		}
		p := r.Provenance["DE"]
		if p.Version == want && p.Source == "zone" && p.Model == "carbon-forecaster-DE" {
			return time.Since(t0)
		}
		if time.Since(t0) > within {
			t.Fatalf("DE provenance %+v after %v, want version %s of carbon-forecaster-DE", p, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRegistryPromotion: with --registry (the embedded store) carbongate
// serves MLflow's API; registering two versions through it and moving the
// champion alias switches what answers /v1/schedule, labelled with the
// registry version, without a restart. Writes need the token.
func TestRegistryPromotion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sources []string
	for i := range 2 {
		src := filepath.Join(dir, fmt.Sprintf("v%d", i+1))
		servetest.Save(t, src, servetest.Production(t, "carbon-forecaster-DE", "DE", i))
		sources = append(sources, src)
	}
	m, _ := startMain(t, "--registry", filepath.Join(dir, "registry.db"), "--registry-token", "s3cret",
		"--registry-poll", "50ms", "--registry-cache-dir", filepath.Join(dir, "cache"), "--drain-delay", "0s",
		"--artifact-sources", strings.Join(sources, ","))
	base := m.URL()
	if code, body := mlflowCall(t, base, "POST", "registered-models/create", "", map[string]any{"name": "carbon-forecaster-DE"}); code != 401 {
		t.Fatalf("write without the token: %d %s, want 401", code, body)
	}
	if code, body := mlflowCall(t, base, "POST", "registered-models/create", "s3cret", map[string]any{"name": "carbon-forecaster-DE"}); code != 200 {
		t.Fatalf("create: %d %s", code, body)
	}
	for _, src := range sources {
		if code, body := mlflowCall(t, base, "POST", "model-versions/create", "s3cret", map[string]any{"name": "carbon-forecaster-DE", "source": src}); code != 200 {
			t.Fatalf("create version: %d %s", code, body)
		}
	}
	for _, v := range []string{"1", "2", "1"} {
		if code, body := mlflowCall(t, base, "POST", "registered-models/alias", "s3cret",
			map[string]any{"name": "carbon-forecaster-DE", "alias": "champion", "version": v}); code != 200 {
			t.Fatalf("set alias: %d %s", code, body)
		}
		d := deVersion(t, base, v, 10*time.Second)
		t.Logf("champion -> %s visible in /v1/schedule after %v", v, d.Round(time.Millisecond))
	}
	code, body := mlflowCall(t, base, "GET", "registered-models/alias?name=carbon-forecaster-DE&alias=champion", "", nil)
	if code != 200 || !strings.Contains(body, `"version":"1"`) {
		t.Fatalf("get by alias: %d %s", code, body)
	}
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"registry":"ok: 1 models from the registry"`) {
		t.Fatalf("readyz %s", b)
	}
	wantMetrics(t, base, `carbongate_dependency_up{dependency="registry"} 1`, "carbongate_registry_promotion_failed 0")
}

// TestRegistryDamagedFile: an embedded registry file that fails its
// checksum is not opened, and /readyz says so instead of calling it an
// unreachable database.
func TestRegistryDamagedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	damaged := `{"format": "carbongate-registry", "version": 3, "checksum": "crc32c:00000000", "models": []}`
	if err := os.WriteFile(path, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	m, logs := startMain(t, "--registry", path, "--registry-poll", "1h", "--drain-delay", "0s")
	resp, err := http.Get(m.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"registry":"registry refused to open: damaged`) {
		t.Fatalf("readyz %d %s, want the registry refused as damaged", resp.StatusCode, b)
	}
	if !strings.Contains(logs.String(), "is damaged") {
		t.Fatalf("the log does not say the file is damaged:\n%s", logs.String())
	}
}

// TestRegistryDownAtStartup: with the database unreachable carbongate still
// starts and schedules (from its other steps); /readyz is 200 and says the
// registry is unreachable; the registry API answers 503.
func TestRegistryDownAtStartup(t *testing.T) {
	t.Parallel()
	m, logs := startMain(t, "--registry", "postgres://carbongate@127.0.0.1:1/registry?connect_timeout=1", "--registry-poll", "1h", "--drain-delay", "0s")
	resp, err := http.Get(m.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"registry":"database unreachable`) || strings.Contains(string(b), "127.0.0.1") {
		t.Fatalf("readyz %d %s, want the registry unreachable without its address", resp.StatusCode, b)
	}
	if code, body := mlflowCall(t, m.URL(), "GET", "registered-models/get?name=carbon-forecaster-DE", "", nil); code != 503 || !strings.Contains(body, "TEMPORARILY_UNAVAILABLE") {
		t.Fatalf("registry API while the database is down: %d %s", code, body)
	}
	sr, err := http.Post(m.URL()+"/v1/schedule", "application/json", strings.NewReader(`{"zones":["DE"],"duration":"PT1H"}`))
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := io.ReadAll(sr.Body)
	sr.Body.Close()
	if sr.StatusCode != 200 || !strings.Contains(string(sb), `"source":"baseline"`) {
		t.Fatalf("schedule while the registry is down: %d %s", sr.StatusCode, sb)
	}
	if !strings.Contains(logs.String(), "registry unreachable; retrying in the background") {
		t.Fatalf("no warning logged:\n%s", logs)
	}
	wantMetrics(t, m.URL(), `carbongate_dependency_up{dependency="registry"} 0`)
}

// TestRegistryUntrustedSource: a version whose source is a local directory
// outside --artifact-sources (here /etc) is not copied and does not serve;
// /readyz, which is public, names the version but no path, and the log
// has the details.
func TestRegistryUntrustedSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	m, logs := startMain(t, "--registry", filepath.Join(dir, "registry.db"), "--registry-token", "s3cret",
		"--registry-poll", "50ms", "--registry-cache-dir", cache, "--drain-delay", "0s",
		"--artifact-sources", filepath.Join(dir, "models"))
	base := m.URL()
	for _, call := range []struct {
		path string
		body map[string]any
	}{
		{"registered-models/create", map[string]any{"name": "carbon-forecaster-DE"}},
		{"model-versions/create", map[string]any{"name": "carbon-forecaster-DE", "source": "/etc"}},
		{"registered-models/alias", map[string]any{"name": "carbon-forecaster-DE", "alias": "champion", "version": "1"}},
	} {
		if code, body := mlflowCall(t, base, "POST", call.path, "s3cret", call.body); code != 200 {
			t.Fatalf("%s: %d %s", call.path, code, body)
		}
	}
	var note string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if note = string(b); strings.Contains(note, "carbon-forecaster-DE version 1") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(note, "carbon-forecaster-DE version 1: refused as invalid") || strings.Contains(note, "/etc") {
		t.Fatalf("readyz %s, want the failed version named without its path", note)
	}
	wantMetrics(t, base, "carbongate_registry_promotion_failed 1")
	if !strings.Contains(logs.String(), "/etc is outside the allowed artifact sources") {
		t.Fatalf("the log does not say why:\n%s", logs)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "carbon-forecaster-DE")); len(ents) > 0 {
		t.Fatalf("copied into the cache: %v", ents)
	}
}
