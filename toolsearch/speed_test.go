package toolsearch_test

import (
	"sort"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit/recorded"
	"github.com/berth-mcp/berth/toolsearch"
)

// SpeedBound is the median time of one search over 10,000 tools that
// TestSearchSpeed10k allows. The aim is 5 ms (BenchmarkSearch10k measures
// it); the bound is ten times that, so that the test holds under the race
// detector and on a loaded machine, and still catches a ranker that got
// slower by an order of magnitude.
const SpeedBound = 50 * time.Millisecond

// TestSearchSpeed10k builds one index of 10,000 tools, shared by its
// subtests, and checks the median of 200 searches against
// SpeedBound: the labelled queries in turn, and the longest of them
// 200 times. It is skipped under -short because building the index of
// 10,000 tools takes about half a second (3 s under -race), more than the
// rest of the package's tests together.
func TestSearchSpeed10k(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an index of 10,000 tools (0.5 s, 3 s under -race)")
	}
	qs, err := recorded.Queries(recorded.Dir())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ix := toolsearch.New(docs10k(t))
	t.Logf("index of 10,000 tools built in %v", time.Since(start))
	longest := qs[0].Query
	for _, q := range qs {
		if len(q.Query) > len(longest) {
			longest = q.Query
		}
	}
	for _, tc := range []struct {
		name  string
		query func(i int) string
	}{
		{"labelled", func(i int) string { return qs[i%len(qs)].Query }},
		{"longest", func(int) string { return longest }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			times := make([]time.Duration, 200)
			for i := range times {
				q := tc.query(i)
				start := time.Now()
				ix.Search(q, 5)
				times[i] = time.Since(start)
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			median := times[len(times)/2]
			t.Logf("median %v, slowest %v over %d searches", median, times[len(times)-1], len(times))
			if median > SpeedBound {
				t.Fatalf("median search over 10,000 tools took %v, above %v (aim 5 ms: go test -bench Search10k ./toolsearch)", median, SpeedBound)
			}
		})
	}
}
