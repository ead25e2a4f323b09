package services

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// ExporterSource returns the source of Azure's
// kubernetes-carbon-intensity-exporter (its Go module and the Carbon Aware
// SDK's OpenAPI document it carries, pkg/sdk/api/swagger.yaml): the folder
// named by CARBONGATE_EXPORTER_SRC, else ../shared/peers/<name> beside the
// clone. The repository keeps no copy of it. A missing folder fails the
// test.
func ExporterSource(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("CARBONGATE_EXPORTER_SRC")
	if dir == "" {
		dir = filepath.Join(RepoRoot(tb), "..", "shared", "peers", "kubernetes-carbon-intensity-exporter")
	}
	if _, err := os.Stat(filepath.Join(dir, "pkg", "sdk", "api", "swagger.yaml")); err != nil {
		tb.Fatalf("services: the exporter's source is not at %s (put the shared peers beside the clone or set CARBONGATE_EXPORTER_SRC): %v", dir, err)
	}
	return dir
}

// BuildExporter builds the exporter (ExporterSource) in a scratch copy of
// its source under a temp dir, never inside carbongate's module: its
// module is not on the proxy, its dependencies are (GOFLAGS=-mod=mod,
// for its go.sum may lag them). The first build downloads them (minutes);
// the Go caches keep later ones fast. It returns the executable.
func BuildExporter(tb testing.TB) string {
	tb.Helper()
	src := ExporterSource(tb)
	dir := tb.TempDir()
	work := filepath.Join(dir, "src")
	if err := os.CopyFS(work, os.DirFS(src)); err != nil {
		tb.Fatalf("services: copy the exporter's source: %v", err)
	}
	exe := filepath.Join(dir, "exporter")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", exe, "./cmd/exporter")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("services: build the exporter: %v\n%s", err, out)
	}
	return exe
}
