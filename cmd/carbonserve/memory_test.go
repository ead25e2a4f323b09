package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var burst []byte

// TestReleaseDueAfterBurst: garbage a burst leaves before any collection
// sweeps it (still in heap/objects, none of it free pages) makes a release
// due; after the release it is not due again.
func TestReleaseDueAfterBurst(t *testing.T) {
	debug.FreeOSMemory()
	base := readHeap(liveMetric)
	if base == 0 {
		t.Fatalf("runtime reports no %s", liveMetric)
	}
	if held := readHeap(heldMetrics...); releaseDue(held, base) {
		t.Fatalf("due at rest: held %d, live %d", held, base)
	}
	burst = make([]byte, 4*releaseAbove)
	for i := range burst {
		burst[i] = byte(i)
	}
	burst = nil
	if held := readHeap(heldMetrics...); !releaseDue(held, base) {
		t.Fatalf("not due after a %d MiB burst: held %d, live %d", 4*releaseAbove>>20, held, base)
	}
	debug.FreeOSMemory()
	runtime.KeepAlive(burst)
	base = readHeap(liveMetric)
	if held := readHeap(heldMetrics...); releaseDue(held, base) {
		t.Fatalf("due right after a release: held %d, live %d", held, base)
	}
}
