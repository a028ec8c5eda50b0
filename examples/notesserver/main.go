// Command notesserver is the example stdio MCP server of berth's demo: it
// searches and reads the Markdown notes under a root directory (the
// workspace's notes/ folder). It has no network access and never writes.
//
//	notesserver --root DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxNote caps what read_note returns.
const maxNote = 1 << 20

type searchArgs struct {
	Query string `json:"query" jsonschema:"words to look for, case-insensitive"`
}

type searchResult struct {
	Matches []match `json:"matches"`
}

type match struct {
	Note string `json:"note"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type readArgs struct {
	Name string `json:"name" jsonschema:"the note's file name, e.g. ideas.md"`
}

func main() {
	root := flag.String("root", ".", "the workspace; notes are read from its notes/ folder")
	flag.Parse()
	notes := filepath.Join(*root, "notes")
	s := mcp.NewServer(&mcp.Implementation{Name: "notesserver", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_notes",
		Description: "Search the Markdown notes of the workspace for lines that contain every word of the query.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in searchArgs) (*mcp.CallToolResult, searchResult, error) {
		res, err := search(notes, in.Query)
		return nil, res, err
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_note",
		Description: "Read one Markdown note of the workspace by its file name.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in readArgs) (*mcp.CallToolResult, any, error) {
		text, err := read(notes, in.Name)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	log.SetOutput(os.Stderr)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

func search(dir, query string) (searchResult, error) {
	words := strings.Fields(strings.ToLower(query))
	if len(words) == 0 {
		return searchResult{}, fmt.Errorf("the query is empty; give one or more words")
	}
	out := searchResult{Matches: []match{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".md") || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		for i, line := range strings.Split(string(data), "\n") {
			lower := strings.ToLower(line)
			all := true
			for _, w := range words {
				all = all && strings.Contains(lower, w)
			}
			if all {
				out.Matches = append(out.Matches, match{Note: filepath.ToSlash(rel), Line: i + 1, Text: strings.TrimSpace(line)})
			}
		}
		return nil
	})
	sort.SliceStable(out.Matches, func(i, j int) bool { return out.Matches[i].Note < out.Matches[j].Note })
	return out, err
}

func read(dir, name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || !strings.HasSuffix(name, ".md") {
		return "", fmt.Errorf("%q is not a note name; give a file name like ideas.md (no folders)", name)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return "", fmt.Errorf("no note %q: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNote+1))
	if err != nil {
		return "", err
	}
	if len(data) > maxNote {
		return "", fmt.Errorf("the note %q is larger than 1 MiB", name)
	}
	return string(data), nil
}
