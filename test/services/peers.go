package services

import (
	"os"
	"path/filepath"
	"testing"
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
