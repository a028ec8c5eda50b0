package cli

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

var sink [][]byte

// TestReclaimableSeesGarbage: garbage made since the last collection
// counts as reclaimable (what berth serve's memory trim acts on), and a
// collection and scavenge bring it down again.
func TestReclaimableSeesGarbage(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection in between
	sample := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	debug.FreeOSMemory()
	base := reclaimable(sample)
	for range 64 {
		sink = append(sink, make([]byte, 256<<10))
	}
	sink = nil // 16 MiB of garbage
	if got := reclaimable(sample); got < base+8<<20 {
		t.Fatalf("reclaimable %d after 16 MiB of garbage, was %d", got, base)
	}
	runtime.GC()
	debug.FreeOSMemory()
	if got := reclaimable(sample); got >= trimAbove {
		t.Fatalf("reclaimable %d after a collection and scavenge, want < %d", got, trimAbove)
	}
}
