package embedded

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/registry"
)

// written is the bytes this process has passed to write calls so far
// (/proc/self/io wchar).
func written(tb testing.TB) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/io")
	must(tb, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			must(tb, err)
			return n
		}
	}
	tb.Fatal("no wchar in /proc/self/io")
	return 0
}

// TestSmallWritesCostWhatTheyChange: a write writes what it changed,
// whatever else the registry holds: 30 one-tag writes on one model of a
// registry of 200 models with descriptions at MLflow's limit (3 MB)
// write about 30 model headers, not 30 registries. Not parallel: it
// counts the whole process's writes.
func TestSmallWritesCostWhatTheyChange(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "registry.json"), registry.Options{Now: fixedClock()})
	fill(t, s, 200)
	ctx := context.Background()
	before := written(t)
	for i := range 30 {
		must(t, s.SetModelTag(ctx, "m-00001", registry.Tag{Key: "k", Value: strconv.Itoa(i)}))
	}
	got, limit := written(t)-before, int64(30*(registry.MaxDescriptionLen+1000))
	t.Logf("30 one-tag writes wrote %d bytes", got)
	if got > limit {
		t.Fatalf("30 one-tag writes wrote %d bytes, want at most %d (one model header each)", got, limit)
	}
}
