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
// OS) when no infer request is in flight and more than releaseAbove bytes
// of the heap are free but still held. It checks every releaseEvery; on a
// live heap of a few MiB the collection takes about a millisecond, and it
// runs only after a burst, never under load (requests in flight) nor when
// there is little to give back. A memory limit (debug.SetMemoryLimit)
// would not help here: the peak is already bounded by the in-flight and
// body limits, and the limit acts only when the heap nears it.
const (
	releaseAbove = 16 << 20
	releaseEvery = time.Second
)

const heapFreeMetric = "/memory/classes/heap/free:bytes"

// returnMemory runs until ctx ends; see above.
func (m *Main) returnMemory(ctx context.Context) {
	sample := []metrics.Sample{{Name: heapFreeMetric}}
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if m.gate.InFlight() > 0 {
			continue
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > releaseAbove {
			debug.FreeOSMemory()
		}
	}
}
