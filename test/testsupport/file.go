package testsupport

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes b to dir/name (mode 0600) and returns its path; an error
// fails tb.
func WriteFile(tb testing.TB, dir, name string, b []byte) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}
