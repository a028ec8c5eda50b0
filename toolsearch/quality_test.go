package toolsearch_test

import (
	"fmt"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit/recorded"
	"github.com/berth-mcp/berth/toolsearch"
)

// recordedDocs are the Docs of the recorded real tools
// (testdata/tools-recorded) under their exported names.
func recordedDocs(t testing.TB) []toolsearch.Doc {
	t.Helper()
	recs, err := recorded.Load(recorded.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var docs []toolsearch.Doc
	for _, r := range recs {
		for _, tl := range r.Tools {
			docs = append(docs, toolsearch.ToolDoc(r.Exported(tl.Name), r.Plugin, r.Server, tl))
		}
	}
	return docs
}

// QualityAim is the share of labelled queries whose right tool must be
// in the top 3 (docs/profiles.md §Search).
const QualityAim = 0.90

// TestQuality measures the ranker over the labelled queries of
// testdata/tools-recorded/queries.json: it fails when fewer than
// QualityAim of them have a right tool in the top 3, and logs the figure
// and every miss.
func TestQuality(t *testing.T) {
	docs := recordedDocs(t)
	qs, err := recorded.Queries(recorded.Dir())
	if err != nil {
		t.Fatal(err)
	}
	ix := toolsearch.New(docs)
	top1, top3, strict := 0, 0, 0
	for _, q := range qs {
		hits := ix.Search(q.Query, 3)
		for _, h := range hits {
			if docs[h.Doc].Name == q.Tool {
				strict++
			}
		}
		found := -1
		for i, h := range hits {
			if q.Right(docs[h.Doc].Name) {
				found = i
				break
			}
		}
		switch {
		case found == 0:
			top1++
			top3++
		case found > 0:
			top3++
		default:
			var got []string
			for _, h := range hits {
				got = append(got, fmt.Sprintf("%s (%.2f)", docs[h.Doc].Name, h.Score))
			}
			t.Logf("miss: %q wants %s, top 3: %v", q.Query, q.Tool, got)
		}
	}
	share := float64(top3) / float64(len(qs))
	t.Logf("right tool in the top 3: %d of %d queries (%.1f %%); first: %d (%.1f %%); %d tools",
		top3, len(qs), 100*share, top1, 100*float64(top1)/float64(len(qs)), len(docs))
	t.Logf("counting only each query's first-named tool, not its alternatives: %d of %d in the top 3 (%.1f %%)",
		strict, len(qs), 100*float64(strict)/float64(len(qs)))
	if share < QualityAim {
		t.Errorf("right tool in the top 3 for %.1f %% of the queries, below the aim of %.0f %%", 100*share, 100*QualityAim)
	}
}
