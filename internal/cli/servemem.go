package cli

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/berth-mcp/berth/pool"
)

// Memory that berth serve returns to the operating system. berth serve
// runs with GOGC=400 (unless GOGC is set), so its heap may grow to five
// times what is live before a collection, and Go's scavenger returns only
// what lies above that goal: the garbage of starting every server (each
// of go-sdk's JSON decodes allocates 32 KiB, bench/README.md) or of a
// burst of sessions would stay resident for as long as berth serve runs.
// So, once the first start of the servers settled and then whenever at
// least trimAbove of the heap is garbage not yet collected or free memory
// still resident (checked every trimEvery), berth serve collects and
// returns the free memory (debug.FreeOSMemory): one collection per
// trimEvery at most, a few milliseconds for berth serve's heap.
const (
	trimEvery = 10 * time.Second
	trimAbove = 4 << 20
)

// trimMemory runs until ctx ends.
func trimMemory(ctx context.Context, p *pool.Pool) {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	p.WaitStarted(wctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	debug.FreeOSMemory()
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	sample := []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"},    // free, still resident
		{Name: "/memory/classes/heap/objects:bytes"}, // live and dead objects
		{Name: "/gc/heap/live:bytes"},                // live at the last collection
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if reclaimable(sample) >= trimAbove {
				debug.FreeOSMemory()
			}
		}
	}
}

// reclaimable is how much a collection and scavenge would return: free
// resident heap, and the objects allocated since the last collection
// beyond what was live then.
func reclaimable(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	var v [3]uint64
	for i := range sample {
		if sample[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		v[i] = sample[i].Value.Uint64()
	}
	free, objects, live := v[0], v[1], v[2]
	if objects > live {
		free += objects - live
	}
	return free
}
