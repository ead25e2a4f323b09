//go:build interop

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// TestJustCrateDB: the "just CrateDB" configuration, registry tables and
// model files in one live CrateDB. carbonctl registry migrate creates the
// registry tables and the blob table; carbonctl register stores two DE
// versions in the blob table (the first as champion), and refuses a
// model over --artifact-max-bytes, naming its size. carbongate fetches
// the champion from the blob table and serves it; carbonserve --model
// models:/carbon-forecaster-DE@champion downloads it through carbongate's
// MLflow API and the blob table and answers with version 1; after
// carbonctl promote, both serve version 2.
func TestJustCrateDB(t *testing.T) {
	const name = "carbon-forecaster-DE"
	crate := services.StartCrateDB(t)
	bin := services.GoBuild(t, "carbongate", "carbonctl", "carbonserve")
	uri := crateRegistryURI(crate.Schema(t))
	table := fmt.Sprintf("crate+blob://%s:%d/e2e_models_%d", crate.Host, crate.HTTPPort, os.Getpid())
	out := ctl(t, bin, nil, "registry", "migrate", "--registry", uri, "--artifacts", table)
	if !strings.Contains(out, "blob table ready ("+table+")") {
		t.Fatalf("registry migrate: %s", out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		table := table[strings.LastIndex(table, "/")+1:]
		if _, err := crateConn(t, crate.URL("doc")).Exec(ctx, `DROP BLOB TABLE IF EXISTS "`+table+`"`); err != nil {
			t.Errorf("drop blob table %s: %v", table, err)
		}
	})

	models := t.TempDir()
	for i, until := range []string{"2021-01-01T00:00:00Z", "2020-10-01T00:00:00Z"} {
		ctl(t, bin, nil, "train", "--data", "bundled", "--until", until, "--signal", "lifecycle", "--zones", "DE",
			"--out", filepath.Join(models, fmt.Sprint(i+1)))
	}
	dir := func(i int) string { return filepath.Join(models, fmt.Sprint(i), "lifecycle", "DE") }

	// Over the cap: refused before anything is registered.
	cmd := exec.Command(filepath.Join(bin, "carbonctl"), "register", "--registry", uri, "--zone", "DE",
		"--artifacts", table, "--artifact-max-bytes", "100", "--model-dir", dir(1))
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "over the artifact size limit of 100 bytes") {
		t.Fatalf("register over the cap: %v\n%s", err, b)
	}

	for i := 1; i <= 2; i++ {
		args := []string{"register", "--registry", uri, "--zone", "DE", "--artifacts", table, "--model-dir", dir(i)}
		if i == 1 {
			args = append(args, "--alias", "champion")
		}
		out := ctl(t, bin, nil, args...)
		if !strings.Contains(out, fmt.Sprintf(`"version":"%d"`, i)) || !strings.Contains(out, `"source":"`+table+"/") {
			t.Fatalf("register (the over-cap attempt must not have taken a version number): %s", out)
		}
	}

	base := startGateway(t, bin, uri, nil, "--artifact-sources", table)
	hc := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	waitVersion(t, hc, base, "1", 30*time.Second)

	var restURL string
	services.StartBinary(t, services.Binary{
		Name: "carbonserve", Path: filepath.Join(bin, "carbonserve"),
		ArgsFor: func() []string {
			hp, gp := services.FreePort(t), services.FreePort(t)
			restURL = fmt.Sprintf("http://127.0.0.1:%d", hp)
			return []string{"--host", "127.0.0.1", "--http_port", fmt.Sprint(hp), "--grpc_port", fmt.Sprint(gp),
				"--model", "models:/" + name + "@champion", "--registry-uri", base, "--registry-poll-interval", "500ms",
				"--artifact-sources", table, "--cache-dir", t.TempDir(), "--drain-delay", "0s"}
		},
		Ready: func(ctx context.Context) error { return services.OIPReady(restURL, "", name)(ctx) },
	})
	infer := inferer(t, restURL, name)
	servesVersion := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			v, err := infer(ctx)
			cancel()
			if err == nil && v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("carbonserve answers with version %q (%v), want %s", v, err, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	servesVersion("1")

	out = ctl(t, bin, nil, "promote", "--registry", uri, "--zone", "DE", "--version", "2")
	if !strings.Contains(out, name+"@champion: version 1 -> 2") {
		t.Fatalf("promote: %s", out)
	}
	waitVersion(t, hc, base, "2", 30*time.Second)
	servesVersion("2")
}
