package pool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/testkit"
)

// A burst of 3,000 updates of three URIs, sent while the first one's
// delivery is still under way, is relayed as four: the first, then each
// URI's last; the 2,996 merged are written to the server's log once.
// After the burst, the token bucket holds deliveries to
// MaxUpdatesPerSecond a second, and each URI's last update still arrives.
func TestResourceUpdatedCoalesced(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := filepath.Join(t.TempDir(), "up.log")
	p := &Pool{}
	c := &conn{ctx: ctx}
	s := &server{p: p, out: newOutput(log), conn: c}
	defer s.out.close()
	uris := []string{"u/0", "u/1", "u/2"}
	c.relays.subs = map[string]subscribers{}
	for _, u := range uris {
		c.relays.subs[u] = subscribers{"client": {}}
	}
	var (
		mu      sync.Mutex
		got     []string
		at      = map[string]time.Time{} // the last delivery of each URI
		entered = make(chan struct{}, 1)
		release = make(chan struct{})
	)
	p.SetResourceUpdatedSink(func(_ context.Context, uri string, who []any) {
		mu.Lock()
		got = append(got, uri)
		at[uri] = time.Now()
		first := len(got) == 1
		mu.Unlock()
		if first {
			entered <- struct{}{}
			<-release
		}
	})
	delivered := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	update := func(uri string) { s.resourceUpdated(ctx, c, &mcp.ResourceUpdatedNotificationParams{URI: uri}) }
	update(uris[0])
	<-entered // the first update is being delivered
	for i := 1; i < 3000; i++ {
		update(uris[i%3])
	}
	update("not/subscribed")
	close(release)
	testkit.Eventually(t, 5*time.Second, "four deliveries", func() bool { return len(delivered()) >= 4 })
	time.Sleep(200 * time.Millisecond)
	if d := delivered(); strings.Join(d, " ") != "u/0 u/1 u/2 u/0" {
		t.Fatalf("delivered %q, want u/0 then each URI's last: u/0 u/1 u/2 u/0", d)
	}
	testkit.Eventually(t, 5*time.Second, "the drop in the server's log", func() bool {
		data, _ := os.ReadFile(log)
		return strings.Contains(string(data), "berth ") && strings.Contains(string(data), ": dropped 2996 notifications/resources/updated: an update of a URI whose last update was still waiting to be relayed is merged into it (at most 10 a second are relayed)")
	})

	// The bucket: 90 updates over about a second, each of a URI that is
	// not waiting any more by then, are relayed at MaxUpdatesPerSecond a
	// second after what the burst left; each URI's last update arrives.
	before := len(delivered())
	start := time.Now()
	lastSent := map[string]time.Time{}
	for i := range 90 {
		lastSent[uris[i%3]] = time.Now()
		update(uris[i%3])
		time.Sleep(10 * time.Millisecond)
	}
	testkit.Eventually(t, 5*time.Second, "the last update of each URI", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range uris {
			if !at[u].After(lastSent[u]) {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(start).Seconds()
	if n := len(delivered()) - before; n > UpdateBurst+int(elapsed*MaxUpdatesPerSecond)+1 {
		t.Fatalf("%d of 90 updates relayed in %.1fs, more than the bucket allows", n, elapsed)
	}
}
