package instances

import (
	"testing"
	"time"
)

func TestLookup(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	for _, name := range []string{"y.2", "Y.2", "  y.2 "} {
		if got, ok := c.Lookup(name); !ok || got.Name != "y.2" {
			t.Fatalf("Lookup(%q)=%q, %v; want y.2", name, got.Name, ok)
		}
	}
	if got, ok := c.Lookup("y.3"); ok {
		t.Fatalf("Lookup(y.3)=%q, want none", got.Name)
	}
	azure, err := Load("azure")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := azure.Lookup("e2as   V4"); !ok || got.Name != "E2as v4" {
		t.Fatalf("Lookup(e2as   V4)=%q, %v; want E2as v4", got.Name, ok)
	}
}

// TestEstimateSize: the provider's average coefficients, all memory
// counted. The test catalog: min_avg 1, max_avg 3, 0.5 W per GB, PUE 1.
func TestEstimateSize(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	tests := []struct {
		vcpus, mem, u, want float64
	}{
		{1, 0, 0, 1},          // 1 × 1
		{2, 4, 0.5, 4 + 2},    // 2 × (1 + 0.5 × 2) + 4 × 0.5
		{0.5, 10, 1, 1.5 + 5}, // 0.5 × 3 + 10 × 0.5
	}
	for _, tt := range tests {
		w := c.EstimateSize(tt.vcpus, tt.mem, tt.u)
		if w.Total != tt.want || w.Compute+w.Memory != tt.want || w.MemoryGB != tt.mem {
			t.Fatalf("EstimateSize(%v, %v, %v)=%+v, want %v W", tt.vcpus, tt.mem, tt.u, w, tt.want)
		}
	}
}

// TestEmbodied: embodied × 10⁶ g × hours / lifespan × vCPUs / the
// family's largest type's vCPUs.
func TestEmbodied(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	y2, _ := c.Lookup("y.2")
	// 2 t × 10⁶ × (10 h / 1000 h) × (2 / 4 vCPUs of y.4) = 10,000 g.
	if g, ok := c.Embodied(y2, 10*time.Hour); !ok || g != 10000 {
		t.Fatalf("Embodied(y.2, 10h)=%v, %v; want 10000", g, ok)
	}
	x2, _ := c.Lookup("x.2")
	if g, ok := c.Embodied(x2, time.Hour); ok {
		t.Fatalf("Embodied(x.2)=%v, want none (no embodied figure)", g)
	}
}
