package toolsearch

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"read_text_file", []string{"read", "text", "fil"}},
		{"readTextFile", []string{"read", "text", "fil"}},
		{"API-post-search", []string{"api", "post", "search"}},
		{"HTMLPage parseJSON", []string{"html", "pag", "pars", "json"}},
		{"github__github__create_issue", []string{"github", "github", "creat", "issu"}},
		{"Take a screenshot of the page", []string{"tak", "screenshot", "pag"}},
		{"taking screenshots of pages", []string{"tak", "screenshot", "pag"}},
		{"list running processes", []string{"list", "run", "process"}},
		{"entities, relations; observations!", []string{"entity", "relation", "observation"}},
		{"status analysis", []string{"status", "analysis"}},
		{"h264 v2 utf8", []string{"h264", "v2", "utf8"}},
		{"Größe ÄNDERN", []string{"größ", "ändern"}},
		{"", nil},
		{"the a of", nil},
	} {
		if got := Tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{
		"files": "fil", "file": "fil", "entities": "entity", "entity": "entity",
		"matches": "match", "addresses": "address", "stopped": "stop", "stop": "stop",
		"created": "creat", "creating": "creat", "create": "creat", "reading": "read",
		"run": "run", "running": "run", "status": "status", "process": "process",
		"need": "need", "pull": "pull", "pulled": "pull", "tree": "tre", "trees": "tre",
	} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

var sample = []Doc{
	{Name: "fs__files__read_file", Plugin: "fs", Server: "files", Description: "Read the complete contents of a file.",
		Params: []Param{{Name: "path", Description: "The file to read"}}},
	{Name: "fs__files__write_file", Plugin: "fs", Server: "files", Description: "Create or overwrite a file with new content.",
		Params: []Param{{Name: "path"}, {Name: "content"}}},
	{Name: "web__browser__take_screenshot", Plugin: "web", Server: "browser", Title: "Screenshot", Description: "Capture the page as an image."},
	{Name: "web__browser__navigate", Plugin: "web", Server: "browser", Description: "Go to a URL."},
	{Name: "git__hub__read_file", Plugin: "git", Server: "hub", Description: "Get a file of a repository."},
}

func names(ix *Index, hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, ix.docs[h.Doc].Name)
	}
	return out
}

func TestSearchRanks(t *testing.T) {
	ix := New(sample)
	for q, want := range map[string]string{
		"read a file":              "fs__files__read_file",
		"take a screenshot":        "web__browser__take_screenshot",
		"capture an image":         "web__browser__take_screenshot",
		"overwrite content":        "fs__files__write_file",
		"go to URL":                "web__browser__navigate",
		"repository file":          "git__hub__read_file",
		"web":                      "web__browser__take_screenshot",
		"  web__browser__navigate": "web__browser__navigate",
	} {
		hits := ix.Search(q, 3)
		if len(hits) == 0 || ix.docs[hits[0].Doc].Name != want {
			t.Errorf("Search(%q) = %v, want %s first", q, names(ix, hits), want)
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Errorf("Search(%q): scores not in order: %v", q, hits)
			}
		}
	}
	if hits := ix.Search("zebra unicorn", 5); len(hits) != 0 {
		t.Errorf("Search of words no doc holds = %v, want none", names(ix, hits))
	}
	if hits := ix.Search("file", 0); hits != nil {
		t.Errorf("limit 0: %v", hits)
	}
	if hits := New(nil).Search("file", 3); hits != nil {
		t.Errorf("empty index: %v", hits)
	}
	if hits := ix.Search("file", 2); len(hits) != 2 {
		t.Errorf("limit 2: %d hits", len(hits))
	}
}

// TestSearchExactName: a query that is an exported name, or a tool part
// of one, puts those tools first even when other tools score higher on
// the words.
func TestSearchExactName(t *testing.T) {
	docs := append(slices.Clone(sample), Doc{Name: "x__y__navigate_files", Plugin: "x", Server: "y",
		Description: "read_file read file read file files file read"})
	ix := New(docs)
	got := names(ix, ix.Search("read_file", 5))
	if len(got) < 3 || !slices.Equal(got[:2], []string{"fs__files__read_file", "git__hub__read_file"}) {
		t.Errorf("Search(read_file) = %v, want both read_file tools first", got)
	}
	got = names(ix, ix.Search("git__hub__read_file", 5))
	if len(got) == 0 || got[0] != "git__hub__read_file" {
		t.Errorf("Search(git__hub__read_file) = %v, want it first", got)
	}
	hits := ix.Search("git__hub__read_file", 5)
	for _, h := range hits[1:] {
		if h.Score >= hits[0].Score {
			t.Errorf("exact hit's score %v not above %v", hits[0].Score, h.Score)
		}
	}
	if got := names(ix, ix.Search("read_file", 1)); !slices.Equal(got, []string{"fs__files__read_file"}) {
		t.Errorf("Search(read_file, 1) = %v", got)
	}
}

// TestSearchConcurrent searches one index from many goroutines (run with
// -race): the index is immutable.
func TestSearchConcurrent(t *testing.T) {
	ix := New(sample)
	want := names(ix, ix.Search("read a file", 3))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got := names(ix, ix.Search("read a file", 3)); !slices.Equal(got, want) {
					t.Errorf("goroutine %d: %v, want %v", i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestSearchLongInput: a query or description of megabytes costs
// bounded time, and only the first MaxQueryBytes of a query count.
func TestSearchLongInput(t *testing.T) {
	huge := strings.Repeat("word ", 1<<20)
	docs := append(slices.Clone(sample), Doc{Name: "big__big__big", Description: huge + " screenshot"})
	start := time.Now()
	ix := New(docs)
	q := strings.Repeat("zz", MaxQueryBytes/2) + " screenshot"
	if hits := ix.Search(q, 5); len(hits) != 0 {
		t.Errorf("a word past MaxQueryBytes was searched: %v", names(ix, hits))
	}
	var b strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&b, "w%d ", i%5000)
	}
	many := b.String()
	ix.Search(many, 5)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("long input took %s", d)
	}
	if hits := ix.Search("screenshot", 5); len(hits) != 1 {
		t.Errorf("text past MaxFieldBytes was indexed: %v", names(ix, hits))
	}
	if got := len(queryTerms(many)); got != MaxQueryTerms {
		t.Errorf("%d query terms, want the cap %d", got, MaxQueryTerms)
	}
	if s := truncate("ééé", 3); s != "é" {
		t.Errorf("truncate cut a character: %q", s)
	}
}
