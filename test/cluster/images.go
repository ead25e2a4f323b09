package cluster

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// ProjectImages builds the project's images as `make images` does
// (deploy/container/build.sh with the Podman of test/setup/podman.sh) and
// saves each as an OCI archive for the nodes' containerd. It returns the
// archives and the images' names by command (carbongate, carbonctl, …).
func ProjectImages(t testing.TB) (archives []string, names map[string]string) {
	t.Helper()
	start := time.Now()
	podman := services.Tool(t, "CARBONGATE_PODMAN", "podman.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "deploy/container/build.sh")
	cmd.Dir = services.RepoRoot(t)
	cmd.Env = append(os.Environ(), "CONTAINER="+podman)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("deploy/container/build.sh: %v\n%s", err, stderr.String())
	}
	names = map[string]string{}
	dir := t.TempDir()
	for _, name := range strings.Fields(string(out)) {
		base := filepath.Base(name)
		cmdName, _, _ := strings.Cut(base, ":")
		names[cmdName] = name
		archive := filepath.Join(dir, cmdName+".oci.tar")
		save, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if b, err := exec.CommandContext(save, podman, "save", "--format", "oci-archive", "-o", archive, name).CombinedOutput(); err != nil {
			t.Fatalf("podman save %s: %v\n%s", name, err, b)
		}
		archives = append(archives, archive)
	}
	if names["carbongate"] == "" || names["carbonctl"] == "" {
		t.Fatalf("deploy/container/build.sh printed %q, want the carbongate and carbonctl images", out)
	}
	t.Logf("images %v built and saved in %v", strings.Fields(string(out)), time.Since(start).Round(100*time.Millisecond))
	return archives, names
}
