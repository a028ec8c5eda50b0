package marketplace

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// bigCatalog publishes a generated catalog of n plugins (two versions
// each, a review summary like a real npx-fetched server's) and adds it.
func bigCatalog(tb testing.TB, n int) *testEnv {
	e := newEnv(tb, repo.Expiries{})
	s := e.catalogSigner()
	words := []string{"notes", "git", "weather", "files", "search", "calendar", "mail", "sql", "docs", "slack"}
	plugins := make([]*catalog.Plugin, n)
	for i := range plugins {
		w := words[i%len(words)]
		plugins[i] = genPlugin(fmt.Sprintf("%s-plugin-%05d", w, i),
			fmt.Sprintf("A %s tool number %d that does useful things for your workspace", w, i),
			catalog.Tiers[i%3], []string{w, fmt.Sprintf("group-%d", i%50)}, s, "1.0.0", "1.1.0")
	}
	e.publishCatalog(plugins...)
	e.addCatalog()
	return e
}

// BenchmarkSearch10k is berth search over a catalog of 10,000 plugins, as
// the command runs it: read the verified copy's state and index, rank,
// resolve the latest version of each result.
func BenchmarkSearch10k(b *testing.B) {
	e := bigCatalog(b, 10000)
	for _, q := range []Query{{Text: "notes-plugin-00420"}, {Text: "weather workspace"}, {}} {
		b.Run(fmt.Sprintf("q=%q", q.Text), func(b *testing.B) {
			for b.Loop() {
				res, err := e.cache.Search(q, nil)
				if err != nil || len(res.Results) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSearch10k: search and show over a catalog of 10,000 plugins find
// what they should. Its speed (the contract: under 50 ms) is
// BenchmarkSearch10k's to measure, not a test's. Under -race, which is
// how CI runs every test, building and verifying 10,000 entries takes
// minutes, so the same checks run on 1,000 (and with -short).
func TestSearch10k(t *testing.T) {
	n := 10000
	if raceEnabled || testing.Short() {
		n = 1000
	}
	e := bigCatalog(t, n)
	res, err := e.cache.Search(Query{Text: "weather workspace"}, nil)
	if err != nil || len(res.Results) != n/10 {
		t.Fatalf("%v, %d results, want the %d weather plugins", err, len(res.Results), n/10)
	}
	last := fmt.Sprintf("weather-plugin-%05d", n-8)
	p, _, err := e.cache.Plugin("acme", last)
	if err != nil || p.Name != last || len(p.Versions) != 2 {
		t.Fatalf("%v %+v", err, p)
	}
}

// BenchmarkAdd10k is berth marketplace add of a 10,000-plugin catalog:
// the TUF bootstrap from the pinned root, the download and verification of
// every role and of catalog.json, and the index written to the cache.
func BenchmarkAdd10k(b *testing.B) {
	e := bigCatalog(b, 10000)
	src, err := ParseSource(e.repoDir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := OpenCache(b.TempDir(), &CacheOptions{Now: e.clk.now})
		if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRefresh10kFetchesOnlyTimestamp: a full TUF refresh of that catalog
// with nothing changed fetches the probe for a next root and the
// timestamp, nothing else.
func TestRefresh10kFetchesOnlyTimestamp(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 500 // the requests do not depend on the size
	}
	e := bigCatalog(t, n)
	e.takeRequests()
	start := time.Now()
	r, err := e.refresh()
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	got := e.takeRequests()
	t.Logf("unchanged refresh of %d plugins: %d requests %v in %s", n, len(got), got, took)
	if r.Changed || !slices.Equal(got, []string{"2.root.json", "timestamp.json"}) {
		t.Errorf("an unchanged refresh fetched %v (changed %v)", got, r.Changed)
	}
	// One change: the new timestamp, snapshot, targets and catalog.
	e.repo().SetStatus(e.ctx, "notes-plugin-00000", "1.0.0", catalog.StatusYanked, "broken", "")
	e.takeRequests()
	if _, err := e.refresh(); err != nil {
		t.Fatal(err)
	}
	if got := e.takeRequests(); len(got) != 5 {
		t.Errorf("a refresh after one change fetched %v", got)
	}
}

// BenchmarkRefresh10kUnchanged is the full TUF update of the 10,000-plugin
// catalog with nothing changed.
func BenchmarkRefresh10kUnchanged(b *testing.B) {
	e := bigCatalog(b, 10000)
	e.takeRequests()
	for b.Loop() {
		if _, err := e.refresh(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(e.takeRequests()))/float64(b.N), "requests/op")
}
