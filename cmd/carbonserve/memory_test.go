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

// TestReleaseRemeasuresAfterBurstPause: a release in a pause of a burst
// measures the burst's bodies and answers as live; with that as the
// yardstick the burst's leftovers were never due (RSS stayed at 85 MiB
// against an idle 25 under load). The next quiet check releases again and
// takes the figure it measures then.
func TestReleaseRemeasuresAfterBurstPause(t *testing.T) {
	const mib = 1 << 20
	r := memoryReturn{base: 6 * mib}
	if r.due(0, 20*mib) {
		t.Fatal("due at rest")
	}
	r.released(30 * mib) // in a pause of the burst
	if r.due(1, 68*mib) {
		t.Fatal("due with a request in flight")
	}
	if !r.due(0, 68*mib) {
		t.Fatal("the burst's leftovers (68 MiB held) not due after a release measured 30 MiB live in a pause of the burst")
	}
	r.released(6 * mib) // quiet now
	if r.due(0, 20*mib) {
		t.Fatal("due again at rest after the quiet release")
	}
	// A live heap that really grew (a larger model) is measured twice, then kept.
	r.released(40 * mib)
	if !r.due(0, 41*mib) {
		t.Fatal("a grown live heap not measured again")
	}
	r.released(40 * mib)
	if r.due(0, 41*mib) {
		t.Fatal("due at rest with the grown live heap measured twice")
	}
}
