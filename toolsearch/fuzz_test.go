package toolsearch

import (
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzSearch feeds untrusted text as a query and as a tool's name,
// description and parameters: no panic, hits in range and in order, and
// bounded time.
func FuzzSearch(f *testing.F) {
	f.Add("read a file", "read_text_file", "Read the complete contents of a file.", "path")
	f.Add("API-post-search", "API-post-search", "Notion | Search by title", "filter")
	f.Add("ÄÖÜ__x", "x__y__z", "\xff\xfe camelCaseHTTPServer", "")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, query, name, desc, param string) {
		for _, s := range []string{query, name, desc, param} {
			for _, w := range Tokens(s) {
				if w == "" {
					t.Fatalf("Tokens(%q) gave an empty word", s)
				}
				if utf8.ValidString(s) && !utf8.ValidString(w) {
					t.Fatalf("Tokens(%q) gave invalid UTF-8 %q", s, w)
				}
			}
		}
		docs := append([]Doc{{Name: name, Description: desc, Title: query, Params: []Param{{Name: param, Description: desc}}}}, sample...)
		start := time.Now()
		ix := New(docs)
		for _, q := range []string{query, name, desc, param} {
			hits := ix.Search(q, 4)
			if len(hits) > 4 {
				t.Fatalf("%d hits for limit 4", len(hits))
			}
			for i, h := range hits {
				if h.Doc < 0 || h.Doc >= len(docs) {
					t.Fatalf("hit %d out of range", h.Doc)
				}
				if i > 0 && h.Score > hits[i-1].Score {
					t.Fatalf("hits out of order: %v", hits)
				}
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %s", d)
		}
	})
}
