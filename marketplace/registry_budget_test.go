package marketplace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle/importer"
)

// hostileRegistry serves pages of 100 server versions, each server.json
// padded to about 75 KB in a field berth keeps (a package's variable's
// description; within MaxRegistryEntry, a page within MaxRegistryPage), for pages pages. It writes each page as it goes, so
// the server holds none of it.
func hostileRegistry(t *testing.T, pages, served *atomic.Int32) string {
	pad := []byte(strings.Repeat("x", 75_000))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Query().Get("cursor"), "c%d", &n)
		served.Add(1)
		w.Write([]byte(`{"servers": [`))
		for i := range 100 {
			if i > 0 {
				w.Write([]byte{','})
			}
			fmt.Fprintf(w, `{"server": {"$schema": %q, "name": "io.github.hostile/s-%d-%d", "version": "1.0.0", "description": "padded", "packages": [{"registryType": "npm", "identifier": "@hostile/s", "version": "1.0.0", "transport": {"type": "stdio"}, "environmentVariables": [{"name": "X", "description": "`, importer.RegistrySchema, n, i)
			w.Write(pad)
			w.Write([]byte(`"}]}]}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "publishedAt": "2026-11-01T00:00:00Z", "isLatest": true}}}`))
		}
		next := ""
		if n+1 < int(pages.Load()) {
			next = fmt.Sprintf(`"nextCursor": "c%d"`, n+1)
		}
		fmt.Fprintf(w, `], "metadata": {%s}}`, next)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A registry within every per-page bound (pages of 100 server versions,
// each server.json about 75 KB) that keeps paginating is refused once
// what berth keeps of it passes foreign.MaxRegistryListing (64 MiB), and
// the heap stays bounded while it is read: the server.json documents are
// on disk, not in memory. Before the bound, 20 such pages (150 MB of
// server.json) were listed whole and held in memory, about 600 MB of heap.
func TestRegistryListingBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("reads about 70 MB from a loopback registry")
	}
	var served, pages atomic.Int32
	pages.Store(20)
	url := hostileRegistry(t, &pages, &served)
	c := newRegistryCache(t, nil)
	src, err := ParseRegistrySource(url)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	_, err = c.AddRegistry(context.Background(), "reg", src)
	close(done)
	<-sampled
	grew := int64(peak.Load()) - int64(base)
	t.Logf("%d pages served; the heap grew by %d MB at most; %v", served.Load(), grew>>20, err)
	var se *SourceRefusedError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "over berth's limit of 64 MiB (67108864 bytes) for one registry") ||
		!strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "catalog reg refused at v0/servers (page") || !strings.Contains(err.Error(), "Nothing was added") {
		t.Errorf("a listing over the budget: %v, want it refused", err)
	}
	if n := served.Load(); n > 10 {
		t.Errorf("%d pages read; berth should stop at the page that passes the budget (the 9th)", n)
	}
	if grew > 100<<20 {
		t.Errorf("the heap grew by %d MB while reading the listing; want it bounded well under 100 MB", grew>>20)
	}
	// Nothing stays: no catalog, no spool.
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("the refused add left %s", e.Name())
		}
	}
}

// CacheOptions.RegistryMaxBytes sets the bound; within it a listing of
// large entries is written whole (each server.json read back from the
// spool), and an update that passes it keeps the cached copy.
func TestRegistryListingBudgetOption(t *testing.T) {
	var served atomic.Int32
	var pages atomic.Int32
	pages.Store(2)
	url := hostileRegistry(t, &pages, &served)
	c := newRegistryCache(t, &CacheOptions{RegistryMaxBytes: 32 << 20})
	r := addRegistry(t, c, url)
	if r.Plugins != 200 {
		t.Fatalf("%d plugins listed, want 200", r.Plugins)
	}
	p, _, err := c.UnsignedEntry("reg", "io-github-hostile-s-1-99")
	if err != nil || len(p.Versions) != 1 || len(p.Versions[0].ServerJSON) < 75_000 || !strings.Contains(string(p.Versions[0].ServerJSON), `"name":"io.github.hostile/s-1-99"`) {
		t.Fatalf("the last entry: %v", err)
	}
	pages.Store(6)
	_, err = c.Refresh(context.Background(), "reg")
	var se *SourceRefusedError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "over berth's limit of 32 MiB (33554432 bytes)") || !strings.Contains(err.Error(), "kept its cached copy") {
		t.Fatalf("an update over the budget: %v", err)
	}
	if infos, _ := c.List(); len(infos) != 1 || infos[0].Plugins != 200 {
		t.Errorf("the cached copy changed: %+v", infos)
	}
}

// berth keeps only the names of the server.json fields it does not use
// (_meta, icons, fields the schema does not define): the review still
// lists them under "not carried over", by name, and a field of another
// schema version still makes the bundle invalid, by name.
func TestRegistryKeepsFieldNames(t *testing.T) {
	item := func(name, extra string) string {
		return fmt.Sprintf(`{"server": {"$schema": %q, "name": %q, "version": "1.0.0", "description": "d",
			"icons": [{"src": "https://acme.example/icon.png", "sizes": ["48x48"]}],
			"packages": [{"registryType": "npm", "identifier": "@acme/weather", "version": "1.0.0", "transport": {"type": "stdio"}}],
			"_meta": {"com.acme/publisher": {"build": %q}}%s},
			"_meta": {"io.modelcontextprotocol.registry/official": {"status": "active", "publishedAt": "2026-11-01T00:00:00Z", "isLatest": true}}}`,
			importer.RegistrySchema, name, strings.Repeat("b", 5000), extra)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"servers": [%s, %s, %s], "metadata": {}}`, item("io.github.acme/weather", ""), item("io.github.acme/odd", `, "extra": {"x": [1, 2, 3]}`), item("io.github.acme/old", `, "status": "active"`))
	}))
	defer srv.Close()
	c := newRegistryCache(t, nil)
	addRegistry(t, c, srv.URL)
	p, _, err := c.UnsignedEntry("reg", "io-github-acme-weather")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(p.Versions[0].ServerJSON); !strings.Contains(s, `"icons":[]`) || !strings.Contains(s, `"_meta":{}`) || strings.Contains(s, "bbbb") || !strings.Contains(s, `"identifier":"@acme/weather"`) {
		t.Errorf("the cached server.json: %s", s)
	}
	sh, err := c.ShowUnsigned(context.Background(), "reg", "io.github.acme/weather", "", nil, nil)
	if err != nil || sh.Review.ImportedFrom == nil {
		t.Fatalf("show: %v", err)
	}
	var fields []string
	for _, n := range sh.Review.ImportedFrom.NotCarriedOver {
		fields = append(fields, n.Field)
	}
	if got := strings.Join(fields, " "); !strings.Contains(got, "icons") || !strings.Contains(got, "_meta") {
		t.Errorf("not carried over: %v, want icons and _meta", fields)
	}
	odd, err := c.ShowUnsigned(context.Background(), "reg", "io.github.acme/odd", "", nil, nil)
	if err != nil || odd.Review.ImportedFrom == nil {
		t.Fatalf("show of an entry with an unknown field: %v", err)
	}
	listed := false
	for _, n := range odd.Review.ImportedFrom.NotCarriedOver {
		listed = listed || n.Field == "server.json: extra" && n.Kind == "unknown-field"
	}
	if !listed {
		t.Errorf("the unknown field is not listed: %+v", odd.Review.ImportedFrom.NotCarriedOver)
	}
	_, err = c.ShowUnsigned(context.Background(), "reg", "io.github.acme/old", "", nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"status" is a field of server.json 2025-07-09, 2025-09-16`) {
		t.Errorf("show of an entry with a field of another version: %v", err)
	}
}
