package toolsearch_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit/recorded"
	"github.com/berth-mcp/berth/toolsearch"
)

// docs10k are 10,000 tools: the recorded real tools (testdata/tools-recorded)
// repeated under distinct plugin names (plugin "github" becomes
// "github-1", "github-2", …), so the words repeat as they would in a
// workspace of many similar servers.
func docs10k(b testing.TB) []toolsearch.Doc {
	recs, err := recorded.Load(recorded.Dir())
	if err != nil {
		b.Fatal(err)
	}
	var docs []toolsearch.Doc
	for copy := 1; len(docs) < 10000; copy++ {
		for _, r := range recs {
			for _, tl := range r.Tools {
				if len(docs) == 10000 {
					return docs
				}
				plugin := fmt.Sprintf("%s-%d", r.Plugin, copy)
				docs = append(docs, toolsearch.ToolDoc(plugin+"__"+r.Server+"__"+tl.Name, plugin, r.Server, tl))
			}
		}
	}
	return docs
}

// BenchmarkSearch10k searches 10,000 tools with the labelled queries in
// turn and reports the median time of one search (median-ns/op).
func BenchmarkSearch10k(b *testing.B) {
	docs := docs10k(b)
	qs, err := recorded.Queries(recorded.Dir())
	if err != nil {
		b.Fatal(err)
	}
	ix := toolsearch.New(docs)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		ix.Search(qs[i%len(qs)].Query, 5)
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/op")
}

// BenchmarkNew10k builds the index of 10,000 tools.
func BenchmarkNew10k(b *testing.B) {
	docs := docs10k(b)
	b.ResetTimer()
	for range b.N {
		toolsearch.New(docs)
	}
}
