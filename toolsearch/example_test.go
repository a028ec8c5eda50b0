package toolsearch_test

import (
	"fmt"

	"github.com/berth-mcp/berth/toolsearch"
)

func Example() {
	ix := toolsearch.New([]toolsearch.Doc{
		{Name: "fs__files__read_text_file", Plugin: "fs", Server: "files", Description: "Read the complete contents of a file as text.",
			Params: []toolsearch.Param{{Name: "path", Description: "The file to read"}}},
		{Name: "web__browser__take_screenshot", Plugin: "web", Server: "browser", Description: "Take a screenshot of the page."},
	})
	for _, q := range []string{"read a file in the project", "screenshot of the page", "take_screenshot"} {
		hits := ix.Search(q, 3)
		fmt.Printf("%s: %d hits, first %d\n", q, len(hits), hits[0].Doc)
	}
	// Output:
	// read a file in the project: 1 hits, first 0
	// screenshot of the page: 1 hits, first 1
	// take_screenshot: 1 hits, first 1
}
