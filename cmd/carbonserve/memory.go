package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Memory return: after a burst of large requests the Go heap keeps the
// pages they used until the next collection lowers the heap goal, and an
// idle server may not collect for two minutes (the runtime's forced
// period), so RSS stays near its peak long after the burst. returnMemory
// calls debug.FreeOSMemory (a collection, then every free page back to the
// OS) when no infer request is in flight and the heap holds more than
// twice its live size after the last full collection plus releaseAbove:
// the heap goal (GOGC 100) lets ordinary traffic hold up to about twice
// the live heap, so only a burst gets past that. It checks every
// releaseEvery; on a live heap of a few MiB the collection takes about a
// millisecond, and it runs only after a burst, never under load (requests
// in flight). A memory limit (debug.SetMemoryLimit) would not help here:
// the peak is already bounded by the in-flight and body limits, and the
// limit acts only when the heap nears it.
//
// What the heap holds counts the garbage no collection has swept yet (it
// is still in heap/objects) as well as the free and unused pages: when
// the burst ends before a collection, nearly all it used is such garbage,
// and counting free pages alone would never release it. The live size is
// the runtime's /gc/heap/live at the first check, then after each release;
// the last collection's own figure would not do, since a collection in the
// middle of a burst marks the burst's requests live. A release in a pause
// of a burst (no request in flight for a moment) has the same flaw: the
// bodies still being read and the answers still being written count as
// live, and with that figure as the yardstick the burst's leftovers were
// never due (under load, RSS stayed at 85 MiB against an idle 25). So a
// release whose live heap grew by more than recheckAbove over the last one
// is done again at the next check with no request in flight.
const (
	releaseAbove = 16 << 20
	recheckAbove = releaseAbove / 4
	releaseEvery = time.Second
)

// heldMetrics are the heap's classes still backed by memory.
var heldMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
}

const liveMetric = "/gc/heap/live:bytes"

// returnMemory runs until ctx ends; see above.
func (m *Main) returnMemory(ctx context.Context) {
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	r := memoryReturn{base: readHeap(liveMetric)}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if r.due(m.gate.InFlight(), readHeap(heldMetrics...)) {
			debug.FreeOSMemory()
			r.released(readHeap(liveMetric))
		}
	}
}

// memoryReturn is returnMemory's state: the yardstick and whether it needs
// measuring again.
type memoryReturn struct {
	base    uint64 // live heap after the last release (bytes)
	recheck bool   // base may hold a burst's requests: release again when quiet
}

// due reports whether to release now, with inFlight infer requests in
// flight and held bytes in the heap.
func (r *memoryReturn) due(inFlight int, held uint64) bool {
	return inFlight == 0 && (r.recheck || releaseDue(held, r.base))
}

// released records the live heap measured right after a release.
func (r *memoryReturn) released(live uint64) {
	r.recheck = live > r.base+recheckAbove
	r.base = live
}

// releaseDue reports whether a heap holding held bytes, whose live size
// after the last full collection was live, holds a burst's leftovers.
func releaseDue(held, live uint64) bool {
	return held > 2*live+releaseAbove
}

// readHeap sums the runtime metrics names (bytes; one the runtime does not
// report counts 0).
func readHeap(names ...string) uint64 {
	samples := make([]metrics.Sample, len(names))
	for i, name := range names {
		samples[i].Name = name
	}
	metrics.Read(samples)
	var sum uint64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			sum += s.Value.Uint64()
		}
	}
	return sum
}
