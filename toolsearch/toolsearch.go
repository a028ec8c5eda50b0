// Package toolsearch ranks a workspace's tools against a few words, for
// berth serve's lazy mode (berth_find_tools, docs/profiles.md §Search).
//
// The ranking is BM25F: one BM25 score over several fields of each tool,
// each field's term frequency weighted and normalized by its own length
// (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25
// and Beyond", 2009). A query that is exactly a tool's exported name, or
// the tool part of it, puts that tool first whatever the scores.
//
// Words are lower-cased, split on anything not a letter or digit and on
// camelCase boundaries (so read_text_file, readTextFile and API-post-search
// split alike), a few English function words are dropped, and each word
// is reduced by a small suffix rule (Stem). There are no synonym tables:
// a query finds the words the tools use.
package toolsearch

import (
	"container/heap"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

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

// The BM25 parameters: K1 saturates a word's repeated occurrences, B
// scales the normalization by a field's length (0 none, 1 full). These
// are the usual values.
const (
	K1 = 1.2
	B  = 0.75
)

// The fields of a tool and their weights in BM25F: a word in the tool's
// own name counts three times a word of its description.
const (
	fieldName        = iota // the tool part of the exported name
	fieldTitle              // Doc.Title
	fieldDescription        // Doc.Description
	fieldParamNames         // every Param.Name
	fieldParamDescs         // every Param.Description
	fieldOrigin             // Doc.Plugin and Doc.Server
	numFields
)

// Weights are the fields' weights, in the order name, title,
// description, parameter names, parameter descriptions, plugin and
// server names.
var Weights = [numFields]float64{3, 2, 1, 1, 0.5, 2}

// MaxQueryBytes caps a query: Search reads only its first MaxQueryBytes
// bytes (cut at a character boundary) and at most MaxQueryTerms distinct
// words of those, so that an untrusted query costs bounded time.
const (
	MaxQueryBytes = 1024
	MaxQueryTerms = 32
)

// MaxFieldBytes caps each field of a Doc that the index reads: text past
// it is not indexed, so that a server's huge description costs bounded
// time and memory.
const MaxFieldBytes = 64 << 10

// Index is an immutable search index over docs; safe for concurrent use.
type Index struct {
	docs []Doc
	// postings maps each word to the docs holding it, with the word's
	// BM25F pseudo-frequency in each (already weighted and normalized:
	// it does not depend on the query).
	postings map[string][]posting
	// idf of each word.
	idf map[string]float64
	// exact maps an exported name, and a tool part of one, to its docs.
	exact map[string][]int
}

type posting struct {
	doc int32
	tf  float32
}

// New builds the index of docs. It keeps docs; the caller must not
// change them afterwards.
func New(docs []Doc) *Index {
	ix := &Index{
		docs:     docs,
		postings: map[string][]posting{},
		idf:      map[string]float64{},
		exact:    map[string][]int{},
	}
	n := len(docs)
	if n == 0 {
		return ix
	}
	// Tokenize every field of every doc once; count field lengths.
	fields := make([][numFields][]string, n)
	var total [numFields]float64
	for i, d := range docs {
		tool := toolPart(d)
		fields[i][fieldName] = Tokens(tool)
		fields[i][fieldTitle] = Tokens(d.Title)
		fields[i][fieldDescription] = Tokens(d.Description)
		var pn, pd []string
		for _, p := range d.Params {
			pn = append(pn, Tokens(p.Name)...)
			pd = append(pd, Tokens(p.Description)...)
		}
		fields[i][fieldParamNames] = capTokens(pn)
		fields[i][fieldParamDescs] = capTokens(pd)
		fields[i][fieldOrigin] = append(Tokens(d.Plugin), Tokens(d.Server)...)
		for f := range numFields {
			total[f] += float64(len(fields[i][f]))
		}
		ix.exact[d.Name] = append(ix.exact[d.Name], i)
		if tool != d.Name {
			ix.exact[tool] = append(ix.exact[tool], i)
		}
	}
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = total[f] / float64(n)
	}
	tf := map[string]float64{}
	for i := range docs {
		clear(tf)
		for f := range numFields {
			toks := fields[i][f]
			if len(toks) == 0 {
				continue
			}
			norm := 1 - B
			if avg[f] > 0 {
				norm += B * float64(len(toks)) / avg[f]
			}
			w := Weights[f] / norm
			for _, t := range toks {
				tf[t] += w
			}
		}
		for t, v := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: float32(v)})
		}
	}
	for t, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[t] = math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	return ix
}

// toolPart is the tool's own name: Name without its
// <plugin>__<server>__ prefix.
func toolPart(d Doc) string {
	if d.Plugin != "" && d.Server != "" {
		if t, ok := strings.CutPrefix(d.Name, d.Plugin+"__"+d.Server+"__"); ok {
			return t
		}
	}
	if i := strings.LastIndex(d.Name, "__"); i >= 0 {
		return d.Name[i+2:]
	}
	return d.Name
}

// Search returns at most limit hits for query, best first; none when no
// doc shares a word with query and none is named by it. A query equal
// to a doc's exported name or to the tool part of it (after trimming
// spaces) puts those docs first; the rest follow by BM25F score. Only the
// first MaxQueryBytes bytes of query are read.
func (ix *Index) Search(query string, limit int) []Hit {
	if limit <= 0 || len(ix.docs) == 0 {
		return nil
	}
	query = truncate(query, MaxQueryBytes)

	scores := make([]float64, len(ix.docs))
	var touched []int32
	for _, t := range queryTerms(query) {
		idf := ix.idf[t]
		for _, p := range ix.postings[t] {
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (K1 + 1) / (K1 + tf)
		}
	}

	// Exact names first, scored above every BM25F score.
	var hits []Hit
	exact := ix.exact[strings.TrimSpace(query)]
	if len(exact) > 0 {
		top := 0.0
		for _, d := range touched {
			top = max(top, scores[d])
		}
		for _, d := range exact {
			if len(hits) == limit {
				return hits
			}
			hits = append(hits, Hit{Doc: d, Score: top + 1})
			scores[d] = 0 // not again below
		}
	}

	// The best limit-len(hits) of the rest: a min-heap of that size.
	k := limit - len(hits)
	h := make(hitHeap, 0, min(k, len(touched)))
	for _, d := range touched {
		s := scores[d]
		if s <= 0 {
			continue
		}
		hit := Hit{Doc: int(d), Score: s}
		if len(h) < k {
			heap.Push(&h, hit)
		} else if better(hit, h[0]) {
			h[0] = hit
			heap.Fix(&h, 0)
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	return append(hits, h...)
}

// better orders hits: higher score first, then the earlier doc.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Doc < b.Doc
}

// hitHeap is a min-heap of hits by better: its root is the worst kept.
type hitHeap []Hit

func (h hitHeap) Len() int           { return len(h) }
func (h hitHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h hitHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hitHeap) Push(x any)        { *h = append(*h, x.(Hit)) }
func (h *hitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// queryTerms are the distinct words of query, at most MaxQueryTerms.
func queryTerms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, t := range Tokens(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		terms = append(terms, t)
		if len(terms) == MaxQueryTerms {
			break
		}
	}
	return terms
}

// truncate cuts s to at most n bytes at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// capTokens keeps the tokens of at most about MaxFieldBytes of text.
func capTokens(toks []string) []string {
	size := 0
	for i, t := range toks {
		size += len(t) + 1
		if size > MaxFieldBytes {
			return toks[:i]
		}
	}
	return toks
}

// Tokens splits text into the index's words: at most MaxFieldBytes of
// text is read; it is split on every character that is not a letter or
// a digit, and before an upper-case letter that follows a lower-case
// letter or digit or that starts a capitalized word after an acronym
// (readTextFile → read text file, HTMLPage → html page); words are
// lower-cased, function words (Stopword) dropped and the rest stemmed
// (Stem).
func Tokens(text string) []string {
	text = truncate(text, MaxFieldBytes)
	var out []string
	start := -1 // the current word's first byte, -1 outside a word
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := strings.ToLower(text[start:end])
		start = -1
		if !Stopword(w) {
			out = append(out, Stem(w))
		}
	}
	var prev rune
	for i, r := range text {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			prev = r
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				flush(i)
			} else if unicode.IsUpper(prev) {
				if next, _ := utf8.DecodeRuneInString(text[i+utf8.RuneLen(r):]); unicode.IsLower(next) {
					flush(i)
				}
			}
		}
		if start < 0 {
			start = i
		}
		prev = r
	}
	flush(len(text))
	return out
}

// stopwords are English function words that say nothing of what a tool
// does; a query's "a", "the" or "my" would otherwise match every
// description.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the of to in on at for with by from into onto
		and or but not no is are was were be been being it its this that these those
		i me my we our you your he she they them their can could would should will
		do does did please how what which when where who whom why some any`) {
		m[w] = true
	}
	return m
}()

// Stopword reports whether the lower-case word w is a function word that
// Tokens drops.
func Stopword(w string) bool { return stopwords[w] }

// Stem reduces a lower-case word by a small suffix rule, so that a
// word's plural, -ing and -ed forms and the word itself meet:
//
//   - words of three letters or fewer, and words with a digit, are kept;
//   - -ies becomes -y (entities → entity), -sses -ss; -es after s, x, z,
//     ch or sh is dropped (processes → process, matches → match); a
//     final -s is dropped unless it follows s, u or i (files → file,
//     status and analysis kept);
//   - -ing and -ed are dropped when at least three letters remain, and a
//     doubled final consonant then loses one (running → run);
//   - a final -e is dropped when at least three letters remain (take,
//     taking → tak; create, created → creat).
//
// It is deliberately light: it joins the forms a query and a
// description most often differ by; it is not a full stemmer (Porter's
// would also join "simulate" and "simulation").
func Stem(w string) string {
	if len(w) <= 3 || strings.ContainsFunc(w, unicode.IsDigit) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes") ||
		strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			w = w[:len(w)-len(suf)]
			if n := len(w); n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
				w = w[:n-1]
			}
			break
		}
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 {
		w = w[:len(w)-1]
	}
	return w
}
