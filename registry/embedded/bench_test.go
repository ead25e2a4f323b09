package embedded

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/registry"
)

// fill writes n models with two versions each, every description at
// MLflow's limit: the unrelated records a small write should not pay for.
func fill(tb testing.TB, s *Store, n int) {
	tb.Helper()
	ctx := context.Background()
	desc := strings.Repeat("d", registry.MaxDescriptionLen)
	for i := range n {
		name := fmt.Sprintf("m-%05d", i)
		_, err := s.CreateModel(ctx, name, desc, nil)
		must(tb, err)
		for range 2 {
			_, err := s.CreateVersion(ctx, registry.NewVersion{Name: name, Source: "s3://b/" + name, Description: desc})
			must(tb, err)
		}
	}
}

// BenchmarkSmallWrite sets one tag on one model of registries of growing
// size, and reports the bytes the registry's files grew by per write.
func BenchmarkSmallWrite(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("models=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "registry.json")
			s := open(b, path, registry.Options{})
			fill(b, s, n)
			ctx := context.Background()
			before := dirSize(b, dir)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				must(b, s.SetModelTag(ctx, "m-00000", registry.Tag{Key: "k", Value: fmt.Sprint(i)}))
			}
			b.StopTimer()
			b.ReportMetric(float64(dirSize(b, dir)-before)/float64(i), "file-B/op")
		})
	}
}

func dirSize(tb testing.TB, dir string) int64 {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	must(tb, err)
	var n int64
	for _, e := range ents {
		info, err := e.Info()
		must(tb, err)
		n += info.Size()
	}
	return n
}
