// Package toolsearch ranks a workspace's tools against a few words, for
// berth serve's lazy mode (berth_find_tools, docs/profiles.md).
package toolsearch

import "strings"

// Doc is one tool as the index sees it.
type Doc struct {
	// Name is the exported name, <plugin>__<server>__<tool>.
	Name        string
	Title       string
	Description string
	Plugin      string
	Server      string
	// Params are the input schema's top-level properties.
	Params []Param
}

// Param is one parameter of a tool's input schema.
type Param struct {
	Name, Description string
}

// Hit is one match: the index of its Doc in the slice New was given,
// and its score (higher is better).
type Hit struct {
	Doc   int
	Score float64
}

// Index is an immutable search index over docs; safe for concurrent use.
type Index struct {
	docs []Doc
}

// New builds the index of docs.
//
// SKELETON: the ranking below is a placeholder that the toolsearch branch
// replaces (BM25, exact names first); keep the API.
func New(docs []Doc) *Index {
	return &Index{docs: docs}
}

// Search returns at most limit hits for query, best first; none when no
// doc shares a word with query.
func (ix *Index) Search(query string, limit int) []Hit {
	var hits []Hit
	q := strings.Fields(strings.ToLower(query))
	for i, d := range ix.docs {
		text := strings.ToLower(d.Name + " " + d.Description)
		score := 0.0
		for _, w := range q {
			if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, Hit{Doc: i, Score: score})
		}
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
